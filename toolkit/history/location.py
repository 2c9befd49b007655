"""Where the history lives: `--db`, else $DNNBENCH_DB, else a per-user SQLite file; and whether
runs record at all ($DNNBENCH_HISTORY=off). A location is read once into a `Location`: a SQLite
file (a path, or a `sqlite:///` URL of any form, `file:` URIs included) or a PostgreSQL URL
(psycopg 3, whatever driver the URL names); anything else is refused in one line. Every text
that names it is `Location.shown` (masked.printable): its password is never printed."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from dnnbench.errors import DnnbenchError
from dnnbench.history import masked
from dnnbench.workloads import fileio

ENV_DB = "DNNBENCH_DB"
ENV_SWITCH = "DNNBENCH_HISTORY"
OFF = ("0", "off", "no", "false")
POSTGRESQL = ("postgresql", "postgres")
DRIVERS = ("", "psycopg", "psycopg2")       # psycopg 3 speaks for both
SQLITE = ("sqlite", "sqlite+pysqlite")
# what a `sqlite:///file:PATH?...` URI may say to SQLite itself (its `mode` is ours when reading)
SQLITE_PARAMS = ("mode", "cache", "immutable", "nolock", "psow", "vfs")
# a file SQLite keeps beside the store: a link or a FIFO planted there is refused as the store would be
SIDECARS = ("-wal", "-shm", "-journal")
FORMS = "sqlite:///PATH, a path, or postgresql://USER:PASSWORD@HOST/DB"


class NoStore(DnnbenchError):
    """The store named holds nothing yet (no file, an empty file or database): nothing recorded."""


@dataclass(frozen=True)
class Location:
    named: str                       # as the user typed it: never printed
    shown: str                       # masked.printable(named): what every message says
    kind: str                        # "sqlite" or "postgresql"
    path: Path | None = None         # SQLite: the file
    params: dict = field(default_factory=dict)   # SQLite: its URI parameters
    url: object | None = None        # PostgreSQL: the SQLAlchemy URL (psycopg 3)

    def scrub(self, text: str) -> str:
        """Another text (an exception's) without this location's secrets."""
        return masked.scrub(text, self.named)

    def failure(self, why: str) -> DnnbenchError:
        return DnnbenchError(f"history store {self.shown}: {self.scrub(why)}")


def recording() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in OFF


def default_path() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "dnnbench" / "history.db"


def is_url(text: str) -> bool:
    """A URL, or a typo of one (`postgresql:/`, `sqlite:`): read as a URL and refused, never as a
    file name (which would make a file named after the password)."""
    return re.match(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:/", text) is not None or "://" in text


def where(db: str | None = None) -> str:
    """The store as the user named it (a path or a URL): never printed as it is (see `shown`)."""
    return db or os.environ.get(ENV_DB) or str(default_path())


def shown(db: str | None = None) -> str:
    """The store named, fit to print."""
    return masked.printable(where(db))


def locate(db: str | None = None) -> Location:
    """The store named, read; DnnbenchError (one line, masked) for what dnnbench cannot open."""
    named = where(db)
    printed = masked.printable(named)
    if "\0" in named:
        raise DnnbenchError(f"history store {printed}: a location holds no NUL character")
    if not is_url(named):
        if printed != named:    # `dbname=x password=y`, `postgresql//u:pw@h`: never a file named after a password
            raise DnnbenchError(f"history store {printed}: not a URL (scheme://), and a file name would hold what "
                                f"looks like a password: give {FORMS}")
        return Location(named, printed, "sqlite", Path(named).expanduser().absolute())
    scheme = named.split(":", 1)[0].strip().lower()
    if "://" not in named or not re.match(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://", named):
        raise DnnbenchError(f"history store {printed}: not a URL (scheme:// and the rest): give {FORMS}")
    base, _, driver = scheme.partition("+")
    if scheme in SQLITE:
        return _sqlite(named, printed)
    if base in POSTGRESQL and driver in DRIVERS:
        return _postgresql(named, printed)
    raise DnnbenchError(f"history store {printed}: {masked.printable(scheme)}:// is not a store dnnbench opens: "
                        f"give {FORMS}")


def _parsed(named: str, printed: str):
    from sqlalchemy.engine import make_url
    try:
        return make_url(named.strip())
    except Exception:  # noqa: BLE001 - its ArgumentError/ValueError text holds the whole URL: never shown
        raise DnnbenchError(f"history store {printed}: not a URL SQLAlchemy can read; give {FORMS}") from None


def _sqlite(named: str, printed: str) -> Location:
    url = _parsed(named, printed)
    database = url.database or ""
    params = {k: v for k, v in url.query.items() if k != "uri"}
    if database.startswith("file:"):       # a SQLite URI: file:PATH, file://localhost/PATH, percent-encoded
        database = unquote(re.sub(r"^file:(//(localhost)?(?=/))?", "", database))
    if database in ("", ":memory:") or params.get("mode") == "memory":
        raise DnnbenchError(f"history store {printed}: an in-memory store keeps nothing: give a file ({FORMS})")
    for key, value in params.items():
        if key not in SQLITE_PARAMS or not isinstance(value, str):   # a list: the key given twice
            raise DnnbenchError(f"history store {printed}: SQLite takes no parameter {masked.printable(key)!r} "
                                f"(it takes {', '.join(SQLITE_PARAMS)}, each once)")
    return Location(named, printed, "sqlite", Path(database).expanduser().absolute(), params)


def _postgresql(named: str, printed: str) -> Location:
    url = _parsed(named, printed)
    # SQLAlchemy and libpq split at the first `@`: the rest of a password holding one would be
    # sent as the host name (and printed by the driver), so such a URL is refused before it is used
    if "@" in (url.host or "") or "@" in (url.username or ""):
        raise DnnbenchError(f"history store {printed}: the URL holds more than one @ before the host: write an @ "
                            f"in the user name or password as %40")
    return Location(named, printed, "postgresql", url=url.set(drivername="postgresql+psycopg"))


def check_file(loc: Location, create: bool) -> None:
    """A SQLite store is a regular file or nothing yet, and so are the files SQLite keeps beside
    it: a link, FIFO, folder or device planted there is refused by name, never followed or
    opened (a FIFO would block the run), whether the store was named by a path or a URL."""
    path = loc.path
    assert path is not None
    for side in SIDECARS:
        kind = fileio.kind_at(f"{path}{side}")
        if kind not in ("missing", "a regular file"):
            raise loc.failure(f"{path.name}{side} beside it is {kind}, not SQLite's own file: remove it or choose "
                              f"another --db / {ENV_DB}")
    kind = fileio.kind_at(str(path))
    if kind == "missing":
        if not create:
            raise NoStore(f"history store {loc.shown} does not exist (nothing recorded yet)")
        parent = path.parent
        if not fileio.is_real_dir(parent):
            try:
                fileio.make_dirs(parent)
            except OSError as exc:
                raise loc.failure(f"cannot make its folder: {exc.strerror or exc}") from None
        return
    if kind != "a regular file":
        raise DnnbenchError(f"history store {loc.shown} is {kind}, not a database file: remove it or "
                            f"choose another --db / {ENV_DB}")
