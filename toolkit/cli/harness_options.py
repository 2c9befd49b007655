"""Typer options built from the harness option table (dnnbench.workloads.options), so `run`,
`slurm` and the container's argparse can never disagree on a name, type, choice or help."""
from __future__ import annotations

import functools
import inspect
from enum import Enum
from typing import Any, Optional

import typer

from dnnbench.workloads.options import HOST_OPTIONS


# The default of a command's parameter that a decorator below fills (harness=, train=, job=...).
INJECTED: Any = None


def choice(name: str, values) -> Any:
    """A typer choice type: validation, --help and completion list the values."""
    return Enum(name, {v.replace("-", "_"): v for v in values}, type=str)


def plain(value):
    """An Enum choice back to the string the rest of dnnbench uses."""
    return value.value if isinstance(value, Enum) else value


def _sentence(text: str) -> str:
    first = text.split(" ", 1)[0]
    return (text[:1].upper() + text[1:] if first.isalpha() else text) + "."


def in_range(option):
    """A click callback refusing what the option table refuses, at parse time: before anything
    (a run folder, a suite's first job) exists."""
    def check(value):
        why = option.problem(plain(value))
        if why:
            raise typer.BadParameter(f"{plain(value)}: {why}")
        return value
    return check


def _parameter(option) -> inspect.Parameter:
    annotation: Any
    if option.kind is bool:
        info = typer.Option(False, option.flag, help=_sentence(option.short))
        annotation = bool
    else:
        info = typer.Option(None, option.flag, help=_sentence(option.short), metavar=option.metavar,
                            callback=in_range(option))
        kind = choice(option.name, option.choices) if option.choices else option.kind
        annotation = Optional[kind]
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def with_harness_options(names: tuple[str, ...] | None = None, options=None, key: str = "harness"):
    """Add the harness options (all host ones, or `names`; or any `options` of a table) to a
    command; the command receives them together as `harness={name: value}` (or under `key`)."""
    chosen = list(options) if options is not None else [o for o in HOST_OPTIONS if names is None or o.name in names]

    def wrap(command):
        sig = inspect.signature(command)
        own = [p for p in sig.parameters.values() if p.name != key]
        params = own + [_parameter(o) for o in chosen]

        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            values = {o.name: plain(kwargs.pop(o.name)) for o in chosen}
            return command(*args, **{key: values}, **{k: plain(v) for k, v in kwargs.items()})
        wrapper.__signature__ = sig.replace(parameters=params)
        return wrapper
    return wrap


def with_params(params: dict, key: str):
    """Add typer parameters {name: (annotation, typer.Option(...))} to a command, which receives
    them together as `key={name: value}`: one definition for every command that takes them."""
    def wrap(command):
        sig = inspect.signature(command)
        own = [p for p in sig.parameters.values() if p.name != key]
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)
                 for name, (annotation, info) in params.items()]

        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            values = {name: plain(kwargs.pop(name)) for name in params}
            return command(*args, **{key: values}, **kwargs)
        wrapper.__signature__ = sig.replace(parameters=own + added)
        return wrapper
    return wrap
