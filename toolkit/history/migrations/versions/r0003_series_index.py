"""A job's series answered from one index (schema 3): `series_key` (a hash of GPU model and
image, since a name may be longer than an index entry may be) and a covering index with what a
series point is made of, so a job's series is summed in the index without reading its rows."""
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
    conn = op.get_bind()
    results = sa.table("results", sa.column("id", sa.Integer), sa.column("gpu", sa.Text),
                       sa.column("image", sa.Text), sa.column("series_key", sa.String(40)))
    rows = conn.execute(sa.select(results.c.id, results.c.gpu, results.c.image)).all()
    for start in range(0, len(rows), 1000):
        conn.execute(sa.update(results).where(results.c.id == sa.bindparam("rid")).values(
            series_key=sa.bindparam("k")), [{"rid": r.id, "k": key(r.gpu, r.image)} for r in rows[start:start + 1000]])
    op.create_index("ix_results_series", "results", COVERING)


def downgrade():
    op.drop_index("ix_results_series", "results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("series_key")
