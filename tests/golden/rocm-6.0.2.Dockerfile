# Rendered by dnnbench 0.1.0 for base rocm-6.0.2: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
FROM rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2" \
      io.dnnbench.base="rocm-6.0.2" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="python3" \
      io.dnnbench.accelerator="amd" \
      io.dnnbench.recipe-sha256="770b6496907877cc899a8a22ec687d67b035cf3b61dfae29a4b0ee5b96fa1395"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="rocm-6.0.2"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
ENTRYPOINT ["python3", "-m", "dnnbench.workloads"]
