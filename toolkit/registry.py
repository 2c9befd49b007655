"""A table of named entries (engines, job kinds, profilers, report formats, host options): an
entry whose name or alias is taken already is refused when it is added, never dropped silently
at a lookup, so a second engine or kind fails where it is defined."""
from __future__ import annotations

import contextlib
from typing import Callable, Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")


class DuplicateEntry(ValueError):
    """A name or alias taken twice in one registry: a mistake in code, not in input."""


class Registry(dict[str, T], Generic[T]):
    """Entries by their name, in the order added; `names(entry)` gives the name and its aliases."""

    def __init__(self, what: str, entries: Iterable[T] = (), names: Callable[[T], Iterable[str]] | None = None):
        super().__init__()
        self.what = what
        self._names = names or (lambda e: (getattr(e, "name"),))
        self._by_alias: dict[str, T] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: T) -> T:
        """Add the entry under its name (and aliases); refuse a name or alias already taken."""
        names = list(self._names(entry))
        if not names or not all(isinstance(n, str) and n for n in names):
            raise DuplicateEntry(f"a {self.what} needs a name: {entry!r}")
        for n in names:
            if n in self._by_alias or names.count(n) > 1:
                raise DuplicateEntry(f"{self.what} {n!r} is taken already: a second {self.what} cannot "
                                     "have the same name or alias")
        for n in names:
            self._by_alias[n] = entry
        dict.__setitem__(self, names[0], entry)
        return entry

    def __setitem__(self, key: str, value: T) -> None:
        raise TypeError(f"add a {self.what} with register(), which refuses a name taken twice")

    def remove(self, name: str) -> None:
        """Take an entry and its aliases out again (a test's stand-in)."""
        entry = dict.pop(self, name)
        for n in list(self._by_alias):
            if self._by_alias[n] is entry:
                del self._by_alias[n]

    @contextlib.contextmanager
    def added(self, entry: T) -> Iterator[T]:
        """The entry registered for the block's length (a test's stand-in), then removed."""
        self.register(entry)
        try:
            yield entry
        finally:
            self.remove(list(self._names(entry))[0])

    def lookup(self, name: str | None) -> T | None:
        """The entry `name` or one of its aliases is, or None."""
        return self._by_alias.get(name) if name is not None else None
