"""The harness options, declared once. The container builds its argparse parser from this
table; the host builds from it its typer options (`dnnbench run`, `dnnbench slurm`), its
RunOptions fields, the argv it passes into the container and the suite schema. A new option
is one line here (plus the code that uses it).

Python 3.7+, stdlib only: this module runs inside old images too.
"""
import os


class Option(object):
    """One harness option. `kind` is int, float, str or bool (a flag); `host` says whether
    the host CLI and suites expose it (container-only ones are set by the host itself);
    `short` is the host help line, `help` the container's."""

    def __init__(self, name, kind, default=None, help="", choices=None, host=True, metavar=None, short=None):
        self.name = name
        self.kind = kind
        self.default = default
        self.help = help
        self.choices = choices
        self.host = host
        self.metavar = metavar
        self.short = short or help

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
    Option("batch_size", int, None, "per-GPU batch size (default: the workload's)"),
    Option("number", int, 10, "iterations per timed window"),
    Option("repeat", int, 10, "timed windows"),
    Option("warmup", int, 5, "untimed iterations first"),
    Option("until_ci", float, None, "after --repeat windows, keep adding windows until the 95%% CI of the headline "
           "throughput is within +-PCT %% of it (at most --max-windows)", metavar="PCT",
           short="after --repeat windows, add windows until the 95% CI of the throughput is within +-PCT % "
                 "(at most --max-windows)"),
    Option("max_windows", int, 100, "with --until-ci: the most timed windows, said up front (default 100)"),
    Option("start_iter", int, None, "TBD-style: first timed iteration (sets --warmup)"),
    Option("stop_iter", int, None, "TBD-style: iteration after the last timed one"),
    Option("workers", int, 4, "DataLoader workers (real data)"),
    Option("loader", str, "auto", "image input pipeline: cpu (PIL in workers), gpu (decode + augment on the GPU), "
           "dali (NVIDIA DALI), auto (the fastest this image has)", choices=LOADERS),
    Option("amp", str, "none", "autocast precision", choices=AMP),
    Option("channels_last", bool, False, "NHWC memory format for images and model"),
    Option("compile", bool, False, "torch.compile the model (PyTorch 2+)"),
    Option("fused", bool, False, "fused optimizer where available"),
    Option("no_cudnn_benchmark", bool, False, "disable cudnn.benchmark autotuning"),
    Option("seed", int, 0, "random seed"),
    Option("lr", float, None, "learning rate (default: the workload's)"),
    Option("cool_down", float, 0, "first wait, at most SECONDS, until the GPUs' temperature stops falling",
           metavar="SECONDS"),
    # set by the host itself, or only useful inside the container
    Option("results", str, None, "folder the result JSON is written to", host=False),
    Option("run_id", str, None, "run id recorded in the result", host=False),
    Option("device", str, None, "default: cuda when available", choices=("cuda", "cpu"), host=False),
    Option("profile_window", str, "none", "cuda: cudaProfilerStart/Stop around the timed window (for nsys/ncu); "
           "torch: torch.profiler trace of the window", choices=("none", "cuda", "torch"), host=False),
    Option("scaling_reference", str, None, "result of a one-process run of the same job: adds scaling efficiency",
           host=False, metavar="RESULT_JSON"),
    Option("progress", float, 5.0, "seconds between progress lines", host=False),
    Option("loss_trace", int, 10000, "most per-step losses kept in the result", host=False),
)

BY_NAME = dict((o.name, o) for o in HARNESS_OPTIONS)
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
            parser.add_argument(o.flag, type=o.kind, default=default, choices=o.choices, metavar=o.metavar,
                                help=o.help)


def argv(values):
    """The container argv for the host's values {name: value} of host options."""
    out = []
    for o in HOST_OPTIONS:
        out += o.argv(values.get(o.name))
    return out
