"""The results table (schema 1)."""
import sqlalchemy as sa
from alembic import op

revision = "r0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("identity", sa.String(64), nullable=False, unique=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("run_id", sa.Text), sa.Column("kind", sa.String(16)),
        sa.Column("job", sa.Text), sa.Column("job_key", sa.String(40), nullable=False), sa.Column("workload", sa.Text),
        sa.Column("status", sa.String(32)), sa.Column("image", sa.Text), sa.Column("digest", sa.Text),
        sa.Column("base", sa.Text), sa.Column("pytorch", sa.Text), sa.Column("cuda", sa.Text),
        sa.Column("cudnn", sa.Text), sa.Column("nccl", sa.Text), sa.Column("driver", sa.Text),
        sa.Column("host", sa.Text), sa.Column("gpu", sa.Text), sa.Column("gpu_count", sa.Integer),
        sa.Column("started", sa.DateTime), sa.Column("throughput", sa.Float), sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float), sa.Column("unit", sa.Text), sa.Column("path", sa.Text),
        sa.Column("recorded", sa.DateTime),
    )
    op.create_index("ix_results_job_started", "results", ["job_key", "started"])
    op.create_index("ix_results_started", "results", ["started"])


def downgrade():
    op.drop_table("results")
