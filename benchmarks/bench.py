"""What the benchmark scripts share: their options, each typed by its default, and how a figure
measured over several rounds is printed (its median and range)."""
import argparse
import statistics

DATA = ("data", "an ImageNet-layout folder (train/, val/)")


def options(doc, required=(), **defaults):
    """A benchmark's argument parser: an option for each (name, help) pair in `required`, then
    one per keyword (batch_size=16 is --batch-size, an int, 16 unless given)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, text in required:
        p.add_argument("--" + name, required=True, help=text)
    for name, default in defaults.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return p


def spread(values):
    return "median %.3f (range %.3f-%.3f)" % (statistics.median(values), min(values), max(values))
