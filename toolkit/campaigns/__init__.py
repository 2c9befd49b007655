"""The commands that run and judge many runs, on a floor above runs/ (one run): compare-images
and bisect, watch, suites and their watch lists, and reproduce (in runs until the rule decides)."""
