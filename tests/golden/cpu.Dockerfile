# Rendered by dnnbench 0.1.0 for base cpu: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM python:3.11-slim-bookworm

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="python:3.11-slim-bookworm" \
      io.dnnbench.base="cpu" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python" \
      io.dnnbench.accelerator="none" \
      io.dnnbench.recipe-sha256="5b43d1f0d1a429ed2e21c5396190348619a524e09a139f595ad64f0e879e7d5d"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="cpu"

# Dependencies before workload code, so a code change reuses this layer.
# The base's own PyTorch is kept: nothing here reinstalls torch over it.
RUN python -m pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu torch==2.14.1 torchvision==0.29.1

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python", "-m", "dnnbench.workloads"]
