# Rendered by dnnbench 0.1.0 for base local:myimage:1.0: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
# Architecture x86_64: `dnnbench build` and `run` refuse an engine of another one.
FROM myimage:1.0

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="myimage:1.0" \
      io.dnnbench.base="local:myimage:1.0" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python3" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.arch="x86_64" \
      io.dnnbench.recipe-sha256="75e02ac24c6d7d1f009d2453aee7d136a163d122d1957ec00f1ec5c92e09c111"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="local:myimage:1.0"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
# The base's own entrypoint is not in the catalog: `dnnbench build` reads it from the image's
# config and puts it in front of the workload here.
ENTRYPOINT ["python3", "-m", "dnnbench.workloads"]
