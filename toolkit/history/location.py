"""Where the history lives: `--db`, else $DNNBENCH_DB, else a per-user SQLite file; and whether
runs record at all ($DNNBENCH_HISTORY=off)."""
from __future__ import annotations

import os
from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

ENV_DB = "DNNBENCH_DB"
ENV_SWITCH = "DNNBENCH_HISTORY"
OFF = ("0", "off", "no", "false")


class NoStore(DnnbenchError):
    """The SQLite store named does not exist yet: nothing was recorded there."""


def recording() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in OFF


def default_path() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "dnnbench" / "history.db"


def is_url(text: str) -> bool:
    return "://" in text


def where(db: str | None = None) -> str:
    """The store as the user named it (a path or a URL), for messages and for `url`."""
    return db or os.environ.get(ENV_DB) or str(default_path())


def check_file(path: Path, create: bool) -> None:
    """A SQLite store is a regular file or nothing yet: a link, FIFO, folder or device planted
    there is refused by name, never followed or opened (a FIFO would block the run)."""
    kind = fileio.kind_at(str(path))
    if kind == "missing":
        if not create:
            raise NoStore(f"history store {path} does not exist (nothing recorded yet)")
        parent = path.parent
        if not fileio.is_real_dir(parent):
            try:
                fileio.make_dirs(parent)
            except OSError as exc:
                raise DnnbenchError(f"history store {path}: cannot make its folder: "
                                    f"{exc.strerror or exc}") from None
        return
    if kind != "a regular file":
        raise DnnbenchError(f"history store {path} is {kind}, not a database file: remove it or "
                            f"choose another --db / {ENV_DB}")


def url(db: str | None = None, create: bool = True) -> str:
    """The SQLAlchemy URL of the store; postgresql:// goes to psycopg 3."""
    named = where(db)
    if is_url(named):
        scheme, rest = named.split("://", 1)
        if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
            return "postgresql+psycopg://" + rest
        if scheme.startswith("sqlite"):
            return named
        raise DnnbenchError(f"history store {named}: only sqlite:// and postgresql:// URLs are supported")
    path = Path(named).expanduser()
    check_file(path, create)
    return f"sqlite:///{path.absolute()}"
