"""Images: the base catalog, recipes rendered from templates, builds, and the engines that run them."""
