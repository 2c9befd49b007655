"""The world's numbers and a run's conditions (schema 4): the `reference_numbers` table (a
published figure imported by `dnnbench refs import`, kept apart from the store's own results),
and on each result whether its host was busy, its contention-corrected throughput and the share
of its timed windows spent waiting for a CPU."""
import sqlalchemy as sa
from alembic import op

revision = "r0004"
down_revision = "r0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("results") as batch:
        batch.add_column(sa.Column("busy", sa.Boolean))
        batch.add_column(sa.Column("corrected", sa.Float))
        batch.add_column(sa.Column("contention", sa.Float))
    op.create_table(
        "reference_numbers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("identity", sa.String(64), nullable=False, unique=True),
        sa.Column("source", sa.String(16), nullable=False), sa.Column("file", sa.Text),
        sa.Column("version", sa.Text), sa.Column("system", sa.Text), sa.Column("gpu", sa.Text),
        sa.Column("gpu_count", sa.Integer), sa.Column("source_workload", sa.Text),
        sa.Column("workload", sa.Text), sa.Column("precision", sa.String(16)),
        sa.Column("batch_size", sa.Integer), sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.Text), sa.Column("spread_low", sa.Float), sa.Column("spread_high", sa.Float),
        sa.Column("samples", sa.Integer), sa.Column("imported", sa.DateTime))
    op.create_index("ix_reference_numbers_workload_gpu", "reference_numbers", ["workload", "gpu"])


def downgrade():
    op.drop_index("ix_reference_numbers_workload_gpu", "reference_numbers")
    op.drop_table("reference_numbers")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("contention")
        batch.drop_column("corrected")
        batch.drop_column("busy")
