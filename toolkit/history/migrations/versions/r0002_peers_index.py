"""An index for `history peers` (one job on one GPU model) (schema 2)."""
from alembic import op

revision = "r0002"
down_revision = "r0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_index("ix_results_job_gpu", "results", ["job_key", "gpu"])


def downgrade():
    op.drop_index("ix_results_job_gpu", "results")
