# Rendered by dnnbench 0.1.0 for base ngc-25.01: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM nvcr.io/nvidia/pytorch:25.01-py3

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="nvcr.io/nvidia/pytorch:25.01-py3" \
      io.dnnbench.base="ngc-25.01" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="nvidia" \
      io.dnnbench.recipe-sha256="365bc259e41146622e7d61a01eb5c21e758321fc8df9a25fe5e9f172340e8cbf"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="ngc-25.01"

# Dependencies before workload code, so a code change reuses this layer.
# The base's own PyTorch is kept: nothing here reinstalls torch over it.
RUN python -m pip install --no-cache-dir nvidia-ml-py==12.535.161

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
