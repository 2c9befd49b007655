"""dnnbench's ReFrame test library: `reframe -c $(python -c 'import dnnbench.reframe as r; print(r.CHECKS)')`."""
from pathlib import Path

CHECKS = Path(__file__).resolve().parent / "checks"
