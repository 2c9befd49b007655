# Rendered by dnnbench 0.1.0 for base ngc-25.01: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
# Architecture x86_64: `dnnbench build` and `run` refuse an engine of another one.
# dnnbench's Python packages are installed in a throwaway stage and copied over.
FROM nvcr.io/nvidia/pytorch:25.01-py3 AS dnnbench-deps
# Distro Pythons refuse `pip install` into their own site-packages (PEP 668) and NGC pins what it
# ships (/etc/pip/constraint.txt): pip --target into dnnbench's own folder works with both, on any pip,
# and leaves the base's environment as it is. A package the base has keeps the base's version;
# the base's constraints choose the version of the others. (hadolint cannot see the versions
# through "$@": every spec in the catalog carries one.)
# hadolint ignore=DL3013
RUN mkdir -p /opt/dnnbench/site \
 && set -- \
 && { python -m pip show -q nvidia-ml-py >/dev/null 2>&1 || set -- "$@" 'nvidia-ml-py>=11.450.51,<14'; } \
 && if [ "$#" -gt 0 ]; then \
      if [ -f /etc/pip/constraint.txt ]; then set -- -c /etc/pip/constraint.txt "$@"; fi; \
      python -m pip install --no-cache-dir --target /opt/dnnbench/site "$@"; \
    fi

FROM nvcr.io/nvidia/pytorch:25.01-py3

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="nvcr.io/nvidia/pytorch:25.01-py3" \
      io.dnnbench.base="ngc-25.01" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.arch="x86_64" \
      io.dnnbench.entrypoint="[\"/opt/nvidia/nvidia_entrypoint.sh\"]" \
      io.dnnbench.recipe-sha256="d2fab5aa1e727457403069ca4f9691de9dc1f17ce8278124338e31800d750570"

ENV PYTHONPATH="/opt/dnnbench:/opt/dnnbench/site" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="ngc-25.01"

# Dependencies before workload code, so a code change reuses this layer.
# The base's own PyTorch is kept: nothing here reinstalls torch over it.
COPY --from=dnnbench-deps /opt/dnnbench/site /opt/dnnbench/site
COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
# The base's own entrypoint (/opt/nvidia/nvidia_entrypoint.sh) runs first, then the workload;
# `dnnbench run` keeps this chain on docker, Apptainer and Slurm.
ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh", "python", "-m", "dnnbench.workloads"]
