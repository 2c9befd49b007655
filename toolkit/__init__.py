"""dnnbench: build and run containerized PyTorch DNN training benchmarks.

This file is copied into images next to the container side, so it stays Python 3.8-clean
and imports nothing.
"""
__version__ = "0.1.0"
