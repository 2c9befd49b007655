"""`python -m dnnbench.reframe`: the folder of dnnbench's checks, for `reframe -c`."""
import sys

from dnnbench.reframe import CHECKS

USAGE = ("usage: python -m dnnbench.reframe\n\nPrints the folder of dnnbench's ReFrame checks, for\n"
         "  reframe -c \"$(python -m dnnbench.reframe)\" -t smoke -r\n(docs/reframe.md).")

# an argument is a mistake (or --help), never a path printed as if it had been understood
if sys.argv[1:] in (["-h"], ["--help"]):
    print(USAGE)
elif sys.argv[1:]:
    print(f"error: python -m dnnbench.reframe takes no argument, not {sys.argv[1]!r}; --help explains",
          file=sys.stderr)
    sys.exit(2)
else:
    print(CHECKS)
