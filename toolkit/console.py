"""Shared rich consoles: results to stdout, progress and diagnostics to stderr.

Paths, run ids, job names and result fields are data: whatever rich would read as markup
(`[/x]`) or an emoji code (`:x:`) must reach the terminal as typed. Both consoles leave
emoji codes alone; markup is only ever dnnbench's own, with every user- or file-derived
string passed through `escape`.
"""
from rich.console import Console
from rich.markup import escape as _escape


class _Console(Console):
    """A rich Console that puts every string it renders (print's arguments, table cells, titles)
    through visible() first: a value that reaches the terminal without its caller's escape is
    still shown, not acted on. Markup is left whole (visible never touches `[`)."""

    def render_str(self, text, **kwargs):
        return super().render_str(visible(text), **kwargs)


out = _Console(highlight=False, emoji=False)
err = _Console(stderr=True, highlight=False, emoji=False)


def escape(value) -> str:
    """Any value as text rich prints literally inside markup."""
    return _escape(str(value))


# what a terminal, an editor or a shell acts on rather than shows: C0 and DEL, C1 (0x9b is a
# one-byte CSI, as ESC [ is), and the bidi controls that reorder a line as it is displayed
# (U+202A-202E, U+2066-2069, the marks U+200E/U+200F/U+061C: a name can show as another)
BIDI = (0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a))
_CONTROL = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
            for c in [*range(0x20), 0x7f, *range(0x80, 0xa0), *BIDI] if c not in (0x09, 0x0a)}
_CONTROL_LINE = {**_CONTROL, 0x0a: "\\n"}


def visible(value, one_line: bool = False) -> str:
    """Text with every control character (ESC sequences, C1, bidi overrides) shown as \\xNN or
    \\uNNNN, never acted on by the terminal: what a user, a file or a result named reaches the
    screen, a log, a table or a script as data. The one escape: everything printed goes through it."""
    return str(value).translate(_CONTROL_LINE if one_line else _CONTROL)


def unprintable(value) -> bool:
    """Whether `value` holds what visible() escapes (a tab or newline included): for values that
    must be refused rather than shown, such as a job script's line or an --env value."""
    return any(ord(c) in _CONTROL_LINE or c == "\t" for c in str(value))


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(visible(message))}", markup=True, soft_wrap=not err.is_terminal)


def info(message: str) -> None:
    # on a terminal, wrapped between words at its width (the terminal itself would cut a word);
    # into a file or a pipe, one line a message, for grep
    err.print(visible(message), markup=False, soft_wrap=not err.is_terminal)


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


WIDE_HELP = ("Every column, each row on one line: for a terminal wider than the table (at 80 columns the "
             "table keeps the deciding columns and names the hidden ones).")


class Column:
    """A table column. `key` columns name the row: never wrapped, never hidden (a cell too long for
    the screen loses its middle to an ellipsis, keeping both ends). A table declares its answer:
    its `headline` column (the figure: throughput, a ratio, minutes) and its `decides` columns (the
    verdict: pass/fail, vs target, status); those are never hidden, wrapped between words only,
    and every other column goes before them. The others wrap between words only and, when the
    terminal is too narrow for every column, the lowest `rank` goes first (behind --wide). A
    `whole` column's cells never wrap (a number and its unit: `3.5 GiB`)."""

    def __init__(self, header: str, *, key: bool = False, right: bool = False, rank: int = 1,
                 decides: bool = False, whole: bool = False, headline: bool = False):
        self.header, self.key, self.right, self.rank, self.decides = header, key, right, rank, decides
        self.whole, self.headline = whole, headline

    @property
    def answer(self) -> bool:
        """The figure or the verdict: the columns a narrow screen keeps after the row's name."""
        return self.headline or self.decides


ELLIPSIS = "\u2026"


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters: its middle replaced by an ellipsis, both ends kept
    (a path's root and its file, an image's registry and its tag)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    tail = (width - 1) // 2
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_table(title: str, columns: list, rows: list, *, wide: bool = False, console=None):
    """A rich Table of `rows` (markup-escaped cells) that fits the console's width without
    splitting a word: each column is at least as wide as its longest word (a key column as its
    longest cell); columns that neither name the row nor decide are hidden, lowest rank first,
    until that minimum fits; if the key columns still overflow, their longest cells lose their
    middle. Returns the table and the headers it hid (none with `wide`, which prints at the
    table's natural width)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    console = console or out
    plain = [[Text.from_markup(c).plain for c in row] for row in rows]

    def least(i: int, col: Column) -> int:
        cells = [col.header] + [row[i] for row in plain]
        if col.key or col.whole:
            return max(len(c) for c in cells)
        return max((len(word) for c in cells for word in c.split()), default=1)
    mins = [least(i, c) for i, c in enumerate(columns)]
    most = [max([len(c.header)] + [len(row[i]) for row in plain]) for i, c in enumerate(columns)]
    shown = list(range(len(columns)))
    room = 10_000 if wide else console.width

    def need() -> int:
        return sum(mins[i] + 3 for i in shown) - 3   # a column: its width, then pad, rule, pad
    same = [i for i in shown if len(rows) > 1 and not columns[i].answer and len({row[i] for row in plain}) == 1]
    if need() > room and same:   # a column with one value in every row is said once, above the table
        title = f"{title} ({'; '.join(f'{escape(columns[i].header)}: {rows[0][i]}' for i in same)})"
        shown = [i for i in shown if i not in same]
    while need() > room:
        droppable = [i for i in shown if not columns[i].key and not columns[i].answer]
        if not droppable:
            break
        shown.remove(min(reversed(droppable), key=lambda i: columns[i].rank))   # the rightmost of the lowest rank
    for i in sorted(set(range(len(columns))) - set(shown) - set(same), key=lambda i: (-columns[i].rank, i)):
        if need() + mins[i] + 3 <= room:   # a narrower column hidden before a wider one of higher rank fits again
            shown = sorted(shown + [i])
    shortened: set[int] = set()
    while need() > room:   # what is kept still overflows: the widest column's longest names lose their middles
        wide_ones = [i for i in shown if mins[i] > max(len(columns[i].header), 12)]
        if not wide_ones:
            break
        i = max(wide_ones, key=lambda k: mins[k])     # one character at a time: the widest pay first
        mins[i] -= 1
        most[i] = mins[i] if columns[i].key else max(mins[i], most[i])
        shortened.add(i)
    # widths fixed here, not by rich (which would shrink a column below its longest word): each
    # gets its minimum, then the room left is shared in proportion to what each could still use
    spare = max(0, room - need())   # none when the key columns alone overflow
    wants = {i: most[i] - mins[i] for i in shown}
    total = sum(wants.values())
    widths = {i: mins[i] + (wants[i] if total <= spare else wants[i] * spare // total) for i in shown}
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i in shown:
        c = columns[i]
        table.add_column(c.header, justify="right" if c.right else "left", no_wrap=c.key or c.whole,
                         overflow="fold", width=max(widths[i], 1))
    def cell(i: int, markup: str, text: str) -> str:
        if i not in shortened or not any(len(word) > widths[i] for word in ([text] if columns[i].key else text.split())):
            return markup
        if columns[i].key:
            return escape(shorten_middle(text, widths[i]))
        return escape(" ".join(shorten_middle(word, widths[i]) for word in text.split(" ")))
    for row, text in zip(rows, plain):
        table.add_row(*[cell(i, row[i], text[i]) for i in shown])
    return table, [columns[i].header for i in range(len(columns)) if i not in shown and i not in same]


def print_table(title: str, columns: list, rows: list, *, wide: bool = False, console=None) -> None:
    """fit_table, printed, with one line naming what did not fit."""
    console = console or out
    table, hidden = fit_table(title, columns, rows, wide=wide, console=console)
    if wide:
        from rich.console import Console
        natural = Console(width=10_000).measure(table).maximum
        wide_console = Console(file=console.file, width=max(console.width, natural),
                               highlight=False, emoji=False, force_terminal=console.is_terminal)
        wide_console.print(table)
        return
    console.print(table)
    if hidden:
        console.print(f"(hidden at {console.width} columns: {escape(', '.join(hidden))}; --wide shows them, "
                      "for a wider terminal)", style="dim")
