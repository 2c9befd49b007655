# Rendered by dnnbench 0.1.0 for base rocm-6.0.2: re-render rather than edit.
# Classic Dockerfile syntax only: the docker SDK builds with the legacy builder (no BuildKit).
# Architecture x86_64: `dnnbench build` and `run` refuse an engine of another one.
FROM rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2

LABEL org.opencontainers.image.title="dnnbench" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.base.name="rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2" \
      io.dnnbench.base="rocm-6.0.2" \
      io.dnnbench.version="0.1.0" \
      io.dnnbench.python="/opt/conda/envs/py_3.10/bin/python" \
      io.dnnbench.accelerator="amd" \
      io.dnnbench.arch="x86_64" \
      io.dnnbench.entrypoint="[]" \
      io.dnnbench.recipe-sha256="e7dbdce7f3d4493fac8db22b46131ff9b639ebf1610196f4c81c63285c967911"

ENV PYTHONPATH="/opt/dnnbench" \
    PYTHONUNBUFFERED="1" \
    DNNBENCH_BASE="rocm-6.0.2"

COPY dnnbench /opt/dnnbench/dnnbench
WORKDIR /workspace
# The base has no entrypoint of its own: the workload starts directly.
ENTRYPOINT ["/opt/conda/envs/py_3.10/bin/python", "-m", "dnnbench.workloads"]
