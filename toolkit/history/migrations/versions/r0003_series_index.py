"""A job's series without reading its rows (schema 3): `series_key` (a hash of GPU model and
image: a name may be longer than an index entry may be), the `series` table of each job's sums
per GPU model, image and day (kept as results are added), and a covering index for a series
over a window of time."""
import hashlib

import sqlalchemy as sa
from alembic import op

revision = "r0003"
down_revision = "r0002"
branch_labels = None
depends_on = None

COVERING = ["job_key", "status", "series_key", "started", "throughput", "ci_low", "ci_high", "id"]


def key(gpu, image) -> str:
    """As dnnbench.history.facts.series_key (copied: a migration keeps the rule it was written with)."""
    return hashlib.sha1(f"{gpu or ''}\0{image or ''}".encode("utf-8", "surrogatepass")).hexdigest()


def upgrade():
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("series_key", sa.String(40)))
    series = op.create_table(
        "series",
        sa.Column("job_key", sa.String(40), primary_key=True), sa.Column("series_key", sa.String(40), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True), sa.Column("n", sa.Integer, nullable=False),
        sa.Column("total", sa.Float, nullable=False), sa.Column("squares", sa.Float, nullable=False),
        sa.Column("first", sa.DateTime), sa.Column("last", sa.DateTime), sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float), sa.Column("first_id", sa.Integer))
    conn = op.get_bind()
    t = sa.table("results", *(sa.column(c) for c in ("id", "gpu", "image", "job_key", "status", "throughput",
                                                     "ci_low", "ci_high")),
                 sa.column("started", sa.DateTime), sa.column("series_key", sa.String(40)))
    rows = conn.execute(sa.select(t.c.id, t.c.gpu, t.c.image, t.c.job_key, t.c.status, t.c.started, t.c.throughput,
                                  t.c.ci_low, t.c.ci_high).order_by(t.c.id)).all()
    sums: dict = {}
    for start in range(0, len(rows), 1000):
        chunk = rows[start:start + 1000]
        conn.execute(sa.update(t).where(t.c.id == sa.bindparam("rid")).values(series_key=sa.bindparam("k")),
                     [{"rid": r.id, "k": key(r.gpu, r.image)} for r in chunk])
    for r in rows:
        if r.status != "ok" or not isinstance(r.throughput, (int, float)):
            continue
        day = r.started.strftime("%Y-%m-%d") if r.started is not None else ""
        g = sums.setdefault((r.job_key, key(r.gpu, r.image), day), {
            "job_key": r.job_key, "series_key": key(r.gpu, r.image), "day": day, "n": 0, "total": 0.0,
            "squares": 0.0, "first": r.started, "last": r.started, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "first_id": r.id})
        g["n"] += 1
        g["total"] += r.throughput
        g["squares"] += r.throughput * r.throughput
        if r.started is not None:
            g["first"] = min(g["first"] or r.started, r.started)
            g["last"] = max(g["last"] or r.started, r.started)
    if sums:
        op.bulk_insert(series, list(sums.values()))
    op.create_index("ix_results_series", "results", COVERING)


def downgrade():
    op.drop_index("ix_results_series", "results")
    op.drop_table("series")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("series_key")
