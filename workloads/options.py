"""The harness options, declared once. The container builds its argparse parser from this
table; the host builds from it its typer options (`dnnbench run`, `dnnbench slurm`), its
RunOptions fields, the argv it passes into the container and the suite schema. A new option
is one line here (plus the code that uses it).

Python 3.7+, stdlib only: this module runs inside old images too.
"""
import math
import os


def _num(x):
    """A bound in words: 2147483647, 1e+06, 0.5."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else "%g" % x


class Option(object):
    """One harness option. `kind` is int, float, str or bool (a flag); `host` says whether
    the host CLI and suites expose it (container-only ones are set by the host itself);
    `short` is the host help line, `help` the container's."""

    def __init__(self, name, kind, default=None, help="", choices=None, host=True, metavar=None, short=None,
                 low=None, high=None, above=None):
        self.name = name
        self.kind = kind
        self.default = default
        self.help = help
        self.choices = choices
        self.host = host
        self.metavar = metavar
        self.short = short or help
        # the valid range, here once for the container's argparse, the host's CLI, suite files,
        # `reproduce` and result reading: low/high inclusive, above exclusive; floats finite
        self.low, self.high, self.above = low, high, above

    def problem(self, value):
        """Why `value` is not valid for this option, in words; None when it is."""
        if value is None or self.kind is bool or self.kind is str:
            if self.choices and value is not None and value not in self.choices:
                return "choose %s" % ", ".join(self.choices)
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        if self.kind is int and not (isinstance(value, int) or float(value).is_integer()):
            return "must be a whole number"
        if not math.isfinite(value):
            return "must be a finite number"
        if self.above is not None and not value > self.above:
            return "must be above %s" % _num(self.above)
        if self.low is not None and value < self.low:
            return "must be at least %s" % _num(self.low) if self.high is None else \
                "must be between %s and %s" % (_num(self.low), _num(self.high))
        if self.high is not None and value > self.high:
            return "must be at most %s" % _num(self.high) if self.low is None else \
                "must be between %s and %s" % (_num(self.low), _num(self.high))
        return None

    def parse(self, text):
        """argparse's `type=`: the value, or the reason it is refused (argparse prints it)."""
        import argparse
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s" % (text, "a whole number" if self.kind is int
                                                               else "a number"))
        why = self.problem(value)
        if why:
            raise argparse.ArgumentTypeError("%s: %s" % (text, why))
        return value

    @property
    def flag(self):
        """The command-line spelling: --batch-size for batch_size."""
        return "--" + self.name.replace("_", "-")

    def argv(self, value):
        """The container argv for a value the host holds; [] when it is the default/unset."""
        if value is None or value is False:
            return []
        if self.kind is bool:
            return [self.flag]
        if self.choices and value == self.default:
            return []
        return [self.flag, "%g" % value if self.kind is float else str(value)]


AMP = ("none", "fp16", "bf16")
LOADERS = ("auto", "cpu", "gpu", "dali")

HARNESS_OPTIONS = (
    Option("batch_size", int, None, "per-GPU batch size (default: the workload's)", low=1, high=2**31 - 1),
    Option("number", int, 10, "iterations per timed window", low=1, high=2**31 - 1),
    Option("repeat", int, 10, "timed windows", low=1, high=2**31 - 1),
    Option("warmup", int, 5, "untimed iterations first", low=0, high=2**31 - 1),
    Option("until_ci", float, None, "after --repeat windows, keep adding windows until the 95%% CI of the headline "
           "throughput is within +-PCT %% of it (at most --max-windows)", metavar="PCT",
           short="after --repeat windows, add windows until the 95% CI of the throughput is within +-PCT % "
                 "(at most --max-windows)", above=0, high=1e6),
    Option("max_windows", int, 100, "with --until-ci: the most timed windows, said up front (default 100)",
           low=1, high=10**6),
    Option("start_iter", int, None, "TBD-style: first timed iteration (sets --warmup)", low=0, high=2**31 - 1),
    Option("stop_iter", int, None, "TBD-style: iteration after the last timed one", low=1, high=2**31 - 1),
    Option("workers", int, 4, "DataLoader workers (real data)", low=0, high=1024),
    Option("loader", str, "auto", "image input pipeline: cpu (PIL in workers), gpu (decode + augment on the GPU), "
           "dali (NVIDIA DALI), auto (the fastest this image has)", choices=LOADERS),
    Option("amp", str, "none", "autocast precision", choices=AMP),
    Option("channels_last", bool, False, "NHWC memory format for images and model"),
    Option("compile", bool, False, "torch.compile the model (PyTorch 2+)"),
    Option("fused", bool, False, "fused optimizer where available"),
    Option("no_cudnn_benchmark", bool, False, "disable cudnn.benchmark autotuning"),
    Option("malloc_defaults", bool, False, "keep glibc malloc's defaults: by default freed CPU buffers stay "
           "mapped, so a CPU step does not fault its large activations in again each time"),
    Option("seed", int, 0, "random seed", low=0, high=2**32 - 1),
    Option("lr", float, None, "learning rate (default: the workload's)", above=0, high=1e6),
    Option("cool_down", float, 0, "first wait, at most SECONDS, until the GPUs' temperature stops falling",
           metavar="SECONDS", low=0, high=86400),
    # set by the host itself, or only useful inside the container
    Option("results", str, None, "folder the result JSON is written to", host=False),
    Option("run_id", str, None, "run id recorded in the result", host=False),
    Option("device", str, None, "default: cuda when available", choices=("cuda", "cpu"), host=False),
    Option("profile_window", str, "none", "cuda: cudaProfilerStart/Stop around the timed window (for nsys/ncu); "
           "torch: torch.profiler trace of the window", choices=("none", "cuda", "torch"), host=False),
    Option("scaling_reference", str, None, "result of a one-process run of the same job: adds scaling efficiency",
           host=False, metavar="RESULT_JSON"),
    Option("per_host", bool, False, "write to RESULTS/HOST with run id RUN_ID-HOST (one run per node: "
           "`dnnbench slurm --each-node`)", host=False),
    Option("progress", float, 5.0, "seconds between progress lines", host=False, low=0, high=1e12),
    Option("loss_trace", int, 10000, "most per-step losses kept in the result", host=False, low=0, high=10**7),
)

# Numbers only the host takes (not passed into the container): their ranges live here too, so
# the CLI, suite files and result reading refuse the same values.
HOST_ONLY_OPTIONS = (
    Option("timeout", float, None, "stop the run after SECONDS", above=0, high=7 * 86400),
    Option("tolerance", float, 0.05, "relative tolerance of a target or a comparison", low=0, high=0.99),
    Option("rounds", int, 8, "the most rounds, each in alternating order (A B, B A, ...): a verdict's evidence",
           low=1, high=100),
    Option("max_runs", int, None, "stop after N runs with the verdict so far", low=1, high=10**6, metavar="N"),
    Option("deadline", float, None, "stop after MIN minutes with the verdict so far", above=0, high=1e6,
           metavar="MIN"),
    Option("weight", float, 1.0, "a job's weight in the score (0 leaves it out)", low=0, high=1e6),
    Option("nodes", int, 1, "Slurm nodes", low=1, high=100000),
    Option("gpus_per_node", int, 0, "GPUs per Slurm node (0: CPUs)", low=0, high=1024),
    Option("nproc_per_node", int, None, "processes per Slurm node", low=1, high=1024),
)

BY_NAME = dict((o.name, o) for o in HARNESS_OPTIONS + HOST_ONLY_OPTIONS)
HOST_OPTIONS = tuple(o for o in HARNESS_OPTIONS if o.host)


def add_to(parser, workload):
    """The harness options on an argparse parser, with the workload's own defaults."""
    defaults = {"batch_size": workload.default_batch_size, "lr": workload.lr,
                "results": os.environ.get("DNNBENCH_RESULTS", "results"),
                "run_id": os.environ.get("DNNBENCH_RUN_ID")}
    for o in HARNESS_OPTIONS:
        default = defaults.get(o.name, o.default)
        if o.kind is bool:
            parser.add_argument(o.flag, action="store_true", help=o.help)
        else:
            parser.add_argument(o.flag, type=o.parse if o.kind in (int, float) else o.kind, default=default,
                                choices=o.choices, metavar=o.metavar, help=o.help)


def problems(values):
    """Every value in {name: value} that the table refuses, as "--flag VALUE: why" lines."""
    out = []
    for name, value in values.items():
        o = BY_NAME.get(name)
        why = o.problem(value) if o is not None else None
        if why:
            out.append("%s %s: %s" % (o.flag, value, why))
    return out


def argv(values):
    """The container argv for the host's values {name: value} of host options."""
    out = []
    for o in HOST_OPTIONS:
        out += o.argv(values.get(o.name))
    return out
