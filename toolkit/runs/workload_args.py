"""Workload options after `--`, checked on the host before any container starts: the container's
own argument parser (the harness's, or the training entry's) is built here (the workload modules
import PyTorch only when they run) and reads them, so a typo is one `error:` line with the nearest
option, not a container that starts, prints its usage and leaves an `error` result."""
from __future__ import annotations

import argparse
import difflib

from dnnbench.errors import DnnbenchError


class _Refused(Exception):
    pass


def _parser(workload: str, train: bool) -> argparse.ArgumentParser | None:
    from dnnbench.workloads import WORKLOADS, harness, load
    if workload not in WORKLOADS:
        return None     # refused elsewhere, with the list of workloads
    if train:
        from dnnbench.workloads import train as train_entry
        parser = train_entry.parser_for(load(workload))
    else:
        parser = harness.parser_for(load(workload))

    def refuse(message: str):
        raise _Refused(message)
    parser.error = refuse            # argparse would print usage and exit
    return parser


def check(workload: str, extra: list[str], *, train: bool = False) -> None:
    """Refuse an option after `--` the workload does not take (with the nearest it does take), or a
    value its parser refuses, naming the command whose options they are."""
    if not extra:
        return
    parser = _parser(workload, train)
    if parser is None:
        return
    known = sorted(s for a in parser._actions for s in a.option_strings if s.startswith("--"))
    where = f"`dnnbench {'train' if train else 'run'} {workload} --help` and `dnnbench workloads {workload}`"
    try:
        _, unknown = parser.parse_known_args((["--data", "."] if train else []) + list(extra))
    except _Refused as exc:
        raise DnnbenchError(f"after `--`: {exc} (see {where})") from None
    if unknown:
        word = unknown[0]
        flag = word.split("=", 1)[0]
        near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        what = "option" if flag.startswith("-") else "argument"
        raise DnnbenchError(f"{workload} takes no {what} {word!r} after `--`{hint} (its options: {where})")
