"""Shared rich consoles: results to stdout, progress and diagnostics to stderr.

Paths, run ids, job names and result fields are data: whatever rich would read as markup
(`[/x]`) or an emoji code (`:x:`) must reach the terminal as typed. Both consoles leave
emoji codes alone; markup is only ever dnnbench's own, with every user- or file-derived
string passed through `escape`.
"""
from rich.console import Console
from rich.markup import escape as _escape

out = Console(highlight=False, emoji=False)
err = Console(stderr=True, highlight=False, emoji=False)


def escape(value) -> str:
    """Any value as text rich prints literally inside markup."""
    return _escape(str(value))


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}", markup=True, soft_wrap=True)


def info(message: str) -> None:
    err.print(message, markup=False, soft_wrap=True)
