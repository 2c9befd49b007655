"""Alembic's entry: always given an open connection by dnnbench.history.schema (never run from
an alembic.ini), so it migrates whichever store the user named."""
from alembic import context

from dnnbench.history.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
