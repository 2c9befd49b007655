"""A job's name where one name must say which row it is (a CSV column, a plot's bar, compare's
row): with its image when the same job ran on several images, which are never pooled."""
from __future__ import annotations


def column_name(job, jobs: dict) -> str:
    images = {other.image for other in jobs.values() if other.job == job.job}
    return f"{job.job} @ {job.image or 'host'}" if len(images) > 1 else job.job
