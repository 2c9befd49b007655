"""`python -m dnnbench.reframe`: the folder of dnnbench's checks, for `reframe -c`."""
from dnnbench.reframe import CHECKS

print(CHECKS)
