"""The workloads' models, one module per family (vision, detection, language, recommendation, ...)."""
