"""Shared rich consoles: results to stdout, progress and diagnostics to stderr."""
from rich.console import Console

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {message}", markup=True, soft_wrap=True)


def info(message: str) -> None:
    err.print(message, markup=False, soft_wrap=True)
