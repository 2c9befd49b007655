"""Result files of a chosen throughput, image and versions, for the history tests: a recorded
fixture with its windows replaced (the statistics recompute everything from them)."""
from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.helpers import ROOT

TEMPLATE = ROOT / "tests" / "fixtures" / "results" / "verdict" / "loader-cpu-w0" / "result.json"
T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)


def write(folder: Path, i: int, rate: float, *, job: str = "resnet50-bs64", image: str | None = None,
          pytorch: str = "2.4.0", noise: float = 0.01, host: str = "node1", seed: int | None = None) -> Path:
    data = json.loads(TEMPLATE.read_text())
    rng = random.Random(i if seed is None else seed)
    run_id = f"h{i:04d}-{host}"
    data.update(run_id=run_id, job=job, started=(T0 + timedelta(hours=i)).isoformat(),
                ended=(T0 + timedelta(hours=i, minutes=5)).isoformat(), world_size=1, ranks=[], copies=None)
    data.pop("copies")
    data["windows"] = [{"items": 640, "seconds": 640 / (rate * (1 + rng.gauss(0, noise)))} for _ in range(12)]
    data["system"] = {**data["system"], "host": host, "pytorch": pytorch, "image": image}
    data["host"] = {**data["host"], "image": image, "base": image}
    out = folder / run_id / "result.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    return out


def store_at(db, revision):
    """A new SQLite store at `db` migrated only up to `revision` (an older dnnbench's); its engine."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from dnnbench.history.schema import MIGRATIONS
    db.parent.mkdir()
    engine = create_engine(f"sqlite:///{db}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    return engine
