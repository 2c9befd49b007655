"""Commands registered on the app beyond the build side (run, report, suites, data)."""
