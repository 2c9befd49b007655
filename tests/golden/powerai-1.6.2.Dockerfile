# Rendered by dnnbench 0.1.0 for base powerai-1.6.2: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM ibmcom/powerai:1.6.2-all-ubuntu18.04-py37-ppc64le

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="ibmcom/powerai:1.6.2-all-ubuntu18.04-py37-ppc64le" \
      io.dnnbench.base="powerai-1.6.2" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.recipe-sha256="de4854a05646218e2a3cd758b344e47cde7494947a611d133861ef43c875c43e"

ENV LICENSE="yes" \
    PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="powerai-1.6.2"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
