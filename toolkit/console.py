"""Shared rich consoles: results to stdout, progress and diagnostics to stderr."""
from rich.console import Console

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {message}", markup=True, soft_wrap=True)


def info(message: str) -> None:
    err.print(message, markup=False, soft_wrap=True)


def number(value, digits: int = 1) -> str:
    """A figure as every table prints it: thousands separators, fixed digits, '-' for none."""
    return "-" if value is None else f"{value:,.{digits}f}"


def progress(*columns, transient: bool = False):
    """A progress bar on stderr: the description, a bar, then `columns` (rich.progress columns)."""
    from rich.progress import BarColumn, Progress
    return Progress("[progress.description]{task.description}", BarColumn(), *columns, console=err,
                    transient=transient)
