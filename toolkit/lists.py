"""The one reader of comma-separated list options (--images, --gpus, ...): members are taken
whole and an empty one (`a:1,,b:1`, a trailing or leading comma) is refused in one line, never
read as a member named "" (a step for image "", say)."""
from __future__ import annotations

from dnnbench.errors import DnnbenchError


def members(text: str, flag: str) -> list[str]:
    """`a,b,c` as ['a', 'b', 'c'] (spaces around a member dropped); one line for an empty one."""
    parts = [p.strip() for p in str(text).split(",")]
    empty = [i + 1 for i, p in enumerate(parts) if not p]
    if empty:
        raise DnnbenchError(f"{flag} {str(text)[:80]!r}: member {empty[0]} of {len(parts)} is "
                            f"empty (a list is A,B,C with no empty member and no comma at either end)")
    return parts
