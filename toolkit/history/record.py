"""Recording a finished result: called once per result where results are finalized. It never
fails a run: a store that is locked, full, read-only, corrupt or unreachable costs one
warning line, and `dnnbench history import` catches up later from the result file."""
from __future__ import annotations

from pathlib import Path

PREFIX = "history not updated"


def record(path: Path, data: dict) -> bool:
    """True when the result is in the store (now or already)."""
    from dnnbench.console import warn
    from dnnbench.history import location
    if not location.recording():
        return False
    try:
        from dnnbench.history.facts import row
        from dnnbench.history.store import Store
        store = Store()
        try:
            store.add([row(path, data)])
        finally:
            store.close()
        return True
    except Exception as exc:  # noqa: BLE001 - the result file is written; nothing here may fail the run
        from dnnbench.errors import DnnbenchError
        from dnnbench.history.masked import scrub
        from dnnbench.history.store import why
        text = str(exc) if isinstance(exc, DnnbenchError) else why(exc)
        warn(f"{PREFIX}: {scrub(text, location.where())} (the result file is kept; `dnnbench history import` "
             f"adds it later)")
        return False
