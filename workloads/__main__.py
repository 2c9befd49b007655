"""python -m dnnbench.workloads WORKLOAD [options] | list"""
import difflib
import sys

from . import WORKLOADS, ending, load


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "list"):
        sys.stdout.write("usage: python -m dnnbench.workloads WORKLOAD [options]   (WORKLOAD --help for options)\n"
                         "workloads: %s\n" % ", ".join(sorted(WORKLOADS)))
        return 0
    name = argv.pop(0)
    if name not in WORKLOADS:
        close = difflib.get_close_matches(name, list(WORKLOADS), n=3)
        sys.stderr.write("error: unknown workload %r%s\n" % (name, "; did you mean %s?" % ", ".join(close) if close else ""))
        return 2
    from .harness import run
    return run(load(name), argv)


if __name__ == "__main__":
    ending.end(main())
