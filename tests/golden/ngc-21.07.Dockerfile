# Rendered by dnnbench 0.1.0 for base ngc-21.07: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM nvcr.io/nvidia/pytorch:21.07-py3

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="nvcr.io/nvidia/pytorch:21.07-py3" \
      io.dnnbench.base="ngc-21.07" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.recipe-sha256="30bacc6ee39f6a43c301b5e77280fee5bbd500fa57d9a35dea03421b4c060c20"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="ngc-21.07"

# Dependencies before workload code, so a code change reuses this layer.
# The base's own PyTorch is kept: nothing here reinstalls torch over it.
RUN python -m pip install --no-cache-dir nvidia-ml-py==12.535.161

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
