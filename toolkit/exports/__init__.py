"""Results out through the doors sites already use: JUnit XML and GitHub step summaries for CI,
OpenMetrics for Prometheus and a Pushgateway."""
