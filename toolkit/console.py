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


_CONTROL = {c: f"\\x{c:02x}" for c in list(range(0x20)) + [0x7f] if c not in (0x09, 0x0a)}
_CONTROL_LINE = {**_CONTROL, 0x0a: "\\n"}


def visible(value, one_line: bool = False) -> str:
    """Text with every control character (ESC sequences included) shown as \\xNN, never acted on
    by the terminal: what a user, a file or a result named reaches the screen as data."""
    return str(value).translate(_CONTROL_LINE if one_line else _CONTROL)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(visible(message))}", markup=True, soft_wrap=True)


def info(message: str) -> None:
    err.print(visible(message), markup=False, soft_wrap=True)


def number(value, digits: int = 1) -> str:
    """A figure as every table prints it: thousands separators, fixed digits, '-' for none;
    what is not a number (a damaged file's "nan" string, junk) is shown escaped, not fatal."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return escape(str(value))[:40]
    return f"{value:,.{digits}f}"


def progress(*columns, transient: bool = False):
    """A progress bar on stderr: the description, a bar, then `columns` (rich.progress columns)."""
    from rich.progress import BarColumn, Progress
    return Progress("[progress.description]{task.description}", BarColumn(), *columns, console=err,
                    transient=transient)
