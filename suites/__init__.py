"""Package data (read through importlib.resources)."""
