"""Time windows for queries: `--since 4w`, `--until 2026-11-01`."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from dnnbench.errors import DnnbenchError

UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse(text: str | None, flag: str, now: datetime | None = None) -> datetime | None:
    """An age (30m, 12h, 3d, 4w: that long before now) or an ISO date/time, as naive UTC."""
    if text is None:
        return None
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    m = re.fullmatch(r"\s*(\d{1,6})\s*([mhdw])\s*", text)
    if m:
        return now - timedelta(**{UNITS[m.group(2)]: int(m.group(1))})
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise DnnbenchError(f"{flag} {text!r}: give an age (30m, 12h, 3d, 4w) or a date (2026-11-01)") from None
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t
