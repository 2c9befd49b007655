"""`python -m dnnbench` is the `dnnbench` command."""
from dnnbench.cli import main

main()
