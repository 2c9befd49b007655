# Rendered by dnnbench 0.1.0 for base cpu: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
# Architecture x86_64: `dnnbench build` and `run` refuse an engine of another one.
# dnnbench's Python packages are installed in a throwaway stage and copied over.
FROM python:3.11-slim-bookworm AS dnnbench-deps
# Distro Pythons refuse `pip install` into their own site-packages (PEP 668) and NGC pins what it
# ships (/etc/pip/constraint.txt): pip --target into dnnbench's own folder works with both, on any pip,
# and leaves the base's environment as it is. A package the base has keeps the base's version;
# the base's constraints choose the version of the others. (hadolint cannot see the versions
# through "$@": every spec in the catalog carries one.)
# hadolint ignore=DL3013
RUN mkdir -p /opt/dnnbench/site \
 && set -- \
 && { python -m pip show -q torch >/dev/null 2>&1 || set -- "$@" torch==2.14.1; } \
 && { python -m pip show -q torchvision >/dev/null 2>&1 || set -- "$@" torchvision==0.29.1; } \
 && if [ "$#" -gt 0 ]; then \
      if [ -f /etc/pip/constraint.txt ]; then set -- -c /etc/pip/constraint.txt "$@"; fi; \
      python -m pip install --no-cache-dir --target /opt/dnnbench/site --extra-index-url https://download.pytorch.org/whl/cpu "$@"; \
    fi

FROM python:3.11-slim-bookworm

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="python:3.11-slim-bookworm" \
      io.dnnbench.base="cpu" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="none" \
      io.dnnbench.arch="x86_64" \
      io.dnnbench.entrypoint="[]" \
      io.dnnbench.recipe-sha256="0b1ce0a25268ee421556e7e05d576008da1fd7dc6a449f7ffd057b64af8d7836"

ENV PYTHONPATH="/opt/dnnbench:/opt/dnnbench/site" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="cpu"

# Dependencies before workload code, so a code change reuses this layer.
# The base's own PyTorch is kept: nothing here reinstalls torch over it.
COPY --from=dnnbench-deps /opt/dnnbench/site /opt/dnnbench/site
COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
# The base has no entrypoint of its own: the workload starts directly.
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
