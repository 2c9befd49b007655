"""Ratings with structure a recommender can learn, in MovieLens's ratings.csv layout: users in
taste groups, each rating items of its group's shelf. Made here (no real ratings dataset can be
had without a network): it tests NCF's training mode and HR@10, not NCF's quality."""
from __future__ import annotations

import random
from pathlib import Path


def write_ratings(dest: Path, users: int = 300, items: int = 400, groups: int = 10, per_user: int = 20,
                  seed: int = 0) -> Path:
    g = random.Random(seed)
    shelf = items // groups
    lines = ["userId,movieId,rating,timestamp"]
    for u in range(1, users + 1):
        group = u % groups
        for k, item in enumerate(g.sample(range(group * shelf, (group + 1) * shelf), per_user)):
            lines.append(f"{u},{item + 1},{g.choice((3.5, 4.0, 5.0))},{1_000_000 + 1000 * u + k}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "ratings.csv").write_text("\n".join(lines) + "\n")
    return dest
