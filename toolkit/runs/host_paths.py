"""Paths as the user knows them: a container's lines name its mount points (/data, /results,
a script's folder); on the user's screen each becomes the host folder mounted there."""
from __future__ import annotations

import re
from typing import Callable


def translator(mounts) -> Callable[[str], str]:
    """A function that rewrites a line's container paths (each mount's target, as a whole path
    component, not inside a longer path) as their host sources; the identity when nothing is mounted."""
    pairs = sorted(((m.target.rstrip("/"), m.source.rstrip("/") or "/") for m in mounts if m.target not in ("", "/")),
                   key=lambda p: -len(p[0]))
    if not pairs:
        return lambda line: line
    sources = dict(pairs)
    pattern = re.compile(r"(?<![\w./~-])(" + "|".join(re.escape(t) for t, _ in pairs) + r")(?=/|[^\w.-]|$)")
    return lambda line: pattern.sub(lambda m: sources[m.group(1)], line)
