"""Published reference numbers (Lambda, MLPerf Training, milabench): imported into the history
store as references, matched to a result by workload, precision and GPU."""
