"""Results: finalized result files, reports and their formats, plots, baselines and the verdict rule."""
