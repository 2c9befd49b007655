"""The store's one table: a row per result, holding the facts queries filter and plot on. The
shape changes only through a migration in migrations/versions (schema.REVISION names the head)."""
from __future__ import annotations

from sqlalchemy import Boolean, Column, DateTime, Float, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

# Names (job, image, host...) are Text: a 10,000-character job name is stored whole. They are
# indexed through fixed-length hashes (`job_key`), since PostgreSQL refuses an index entry
# over about 2.7 kB.
results = Table(
    "results", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("identity", String(64), nullable=False, unique=True),   # run id + host + start time
    Column("content_hash", String(64), nullable=False),
    Column("run_id", Text), Column("kind", String(16)),
    Column("job", Text), Column("job_key", String(40), nullable=False), Column("workload", Text),
    Column("status", String(32)), Column("image", Text), Column("digest", Text), Column("base", Text),
    Column("pytorch", Text), Column("cuda", Text), Column("cudnn", Text), Column("nccl", Text),
    Column("driver", Text), Column("host", Text), Column("gpu", Text), Column("gpu_count", Integer),
    Column("started", DateTime), Column("throughput", Float), Column("ci_low", Float),
    Column("ci_high", Float), Column("unit", Text), Column("path", Text), Column("recorded", DateTime),
    Column("series_key", String(40)),     # facts.series_key: one GPU model and image (schema 3)
    # schema 4: the host was busy during the run (kept out of peers/series/changes by default),
    # the contention-corrected throughput and the share of the timed windows waiting for a CPU
    Column("busy", Boolean), Column("corrected", Float), Column("contention", Float),
    Index("ix_results_job_started", "job_key", "started"),
    Index("ix_results_started", "started"),
    Index("ix_results_job_gpu", "job_key", "gpu"),
    # a job's series summed from the index alone (Store.series), never its rows
    Index("ix_results_series", "job_key", "status", "series_key", "started", "throughput", "ci_low", "ci_high", "id"),
)

COLUMNS = [c.name for c in results.columns if c.name != "id"]

# A job's series kept summed as results are added (schema 3): a row per job, GPU model and image
# (series_key) and day, with the sums a point is made of, so `history series` reads a row per
# image and day however many results a job holds. Only ok results with a throughput count.
series = Table(
    "series", metadata,
    Column("job_key", String(40), primary_key=True), Column("series_key", String(40), primary_key=True),
    Column("day", String(10), primary_key=True),      # YYYY-MM-DD of `started` (UTC), "" when unknown
    Column("n", Integer, nullable=False), Column("total", Float, nullable=False),
    Column("squares", Float, nullable=False), Column("first", DateTime), Column("last", DateTime),
    Column("ci_low", Float), Column("ci_high", Float),     # a one-result point's own CI
    Column("first_id", Integer),                            # the row whose facts the point shows
)

# A published figure (Lambda, MLPerf Training, milabench), imported by `dnnbench refs import`
# (schema 4): never a result, never part of a job's series. `identity` makes import idempotent.
reference_numbers = Table(
    "reference_numbers", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("identity", String(64), nullable=False, unique=True),
    Column("source", String(16), nullable=False), Column("file", Text), Column("version", Text),
    Column("system", Text), Column("gpu", Text), Column("gpu_count", Integer),
    Column("source_workload", Text),    # the workload as the source names it
    Column("workload", Text),           # dnnbench's workload where one matches, else NULL
    Column("precision", String(16)), Column("batch_size", Integer),
    Column("value", Float, nullable=False), Column("unit", Text),   # items/s, or minutes to train
    Column("spread_low", Float), Column("spread_high", Float),      # over the rows merged into it
    Column("samples", Integer), Column("imported", DateTime),
    Index("ix_reference_numbers_workload_gpu", "workload", "gpu"),
)
