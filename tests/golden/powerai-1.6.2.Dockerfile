# Rendered by dnnbench 0.1.0 for base powerai-1.6.2: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
# Architecture ppc64le: `dnnbench build` and `run` refuse an engine of another one.
FROM ibmcom/powerai:1.6.2-all-ubuntu18.04-py37-ppc64le

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="ibmcom/powerai:1.6.2-all-ubuntu18.04-py37-ppc64le" \
      io.dnnbench.base="powerai-1.6.2" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.arch="ppc64le" \
      io.dnnbench.recipe-sha256="45436d893b5410c7b56f3ed65fc04ae90ac8b92b6e8a11a3f69d620c8139bd13"

ENV LICENSE="yes" \
    PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="powerai-1.6.2"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
# The base's own entrypoint is not in the catalog: `dnnbench build` reads it from the image's
# config and puts it in front of the workload here.
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
