"""dnnbench's ReFrame test library: `reframe -c "$(python -m dnnbench.reframe)" -t smoke -r`.
The checks are in CHECKS (package data, loaded by ReFrame by path); the classes they register,
for a site's own subclasses, in dnnbench.reframe.library (docs/reframe.md)."""
from pathlib import Path

CHECKS = Path(__file__).resolve().parent / "checks"
