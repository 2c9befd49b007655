"""One run: its options, checks, plan, job kind, placement (local or Slurm) and supervision."""
