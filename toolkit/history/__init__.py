"""The results history: every result dnnbench writes, also recorded in a database (SQLite in a
file by default, PostgreSQL when a URL is given), so questions over time and across machines
(is this number normal, when did this job get slower, what changed) are queries. The result
file stays the source of truth; the store is an index of results that `history import`
can always rebuild. SQLAlchemy is imported only on this path, never at `dnnbench --help`."""
