# Rendered by dnnbench 0.1.0 for base local:myimage:1.0: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM myimage:1.0

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="myimage:1.0" \
      io.dnnbench.base="local:myimage:1.0" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python3" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.recipe-sha256="da8182982231769afe824ebb5ddc6cb69df1e699caedeb4f6c89dd50d6525067"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="local:myimage:1.0"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python3", "-m", "dnnbench.workloads"]
