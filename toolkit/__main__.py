"""`python -m dnnbench` is the `dnnbench` command."""
from .cli import main

main()
