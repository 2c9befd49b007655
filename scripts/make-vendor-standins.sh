#!/usr/bin/env bash
# Local stand-ins for vendor images, made FROM the test base without any registry and tagged
# with the vendors' own names, so `dnnbench build --base ngc-24.10` (or rocm-6.0.2) uses them
# without a pull. Each carries the facts of its vendor that dnnbench must cope with:
#   ngc:  ENTRYPOINT /opt/nvidia/nvidia_entrypoint.sh (prints a marker, execs its arguments),
#         /etc/pip/constraint.txt pinning nvidia-ml-py to another version than dnnbench asks,
#         an EXTERNALLY-MANAGED system Python (Debian 12's), `python` on the PATH;
#   rocm: no ENTRYPOINT, PyTorch's Python in a conda-style environment /opt/conda/envs/py_3.10.
# Cached: an image whose recipe label matches this script's recipe is kept.
set -euo pipefail
BASE=${DNNBENCH_TEST_BASE:-$(cat "$(dirname "$0")/test-base.tag")}
NGC_TAG=${DNNBENCH_STANDIN_NGC:-nvcr.io/nvidia/pytorch:24.10-py3}
ROCM_TAG=${DNNBENCH_STANDIN_ROCM:-rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2}
NGC_CONSTRAINED=12.570.86   # nvidia-ml-py pinned by the stand-in's constraint file
log() { printf '[make-vendor-standins] %s\n' "$*"; }

build() {  # build TAG CONTEXT_DIR: cached by the sha256 of the context
  local tag=$1 ctx=$2 sha
  sha=$( (docker image inspect -f "{{.Id}}" "$BASE"; cd "$ctx" && cat ./*) | sha256sum | cut -c1-16)
  if [ "$(docker image inspect -f '{{ index .Config.Labels "io.dnnbench.standin" }}' "$tag" 2>/dev/null)" = "$sha" ]; then
    log "$tag exists (cached)"; return
  fi
  log "building $tag from $BASE"
  docker build -q --label "io.dnnbench.standin=$sha" --build-arg "BASE=$BASE" -t "$tag" "$ctx" >/dev/null
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/ngc"
cat >"$work/ngc/nvidia_entrypoint.sh" <<'SH'
#!/bin/sh
# Stand-in for NVIDIA's entrypoint: a banner line, then the command (NVIDIA's ends the same way).
echo "== NGC stand-in entrypoint: checks done =="
if [ "$#" -eq 0 ]; then exec /bin/bash; fi
exec "$@"
SH
cat >"$work/ngc/Dockerfile" <<DOCKERFILE
ARG BASE
FROM \$BASE
COPY nvidia_entrypoint.sh /opt/nvidia/nvidia_entrypoint.sh
RUN chmod 755 /opt/nvidia/nvidia_entrypoint.sh \\
 && mkdir -p /etc/pip && echo "nvidia-ml-py==$NGC_CONSTRAINED" > /etc/pip/constraint.txt \\
 && ln -s /usr/bin/python3 /usr/local/bin/python \\
 && test -f /usr/lib/python3.11/EXTERNALLY-MANAGED
# Every pip call in the image honours the pins, as NGC's release notes describe.
ENV PIP_CONSTRAINT=/etc/pip/constraint.txt
ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]
CMD ["/bin/bash"]
DOCKERFILE
build "$NGC_TAG" "$work/ngc"

mkdir -p "$work/rocm"
cat >"$work/rocm/Dockerfile" <<'DOCKERFILE'
ARG BASE
FROM $BASE
# A venv standing in for conda's env: the test base has no ensurepip, and the base's torch shows through.
RUN python3 -m venv --without-pip --system-site-packages /opt/conda/envs/py_3.10
ENV PATH=/opt/conda/envs/py_3.10/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["/bin/bash"]
DOCKERFILE
build "$ROCM_TAG" "$work/rocm"
log "done: $NGC_TAG (nvidia-ml-py pinned to $NGC_CONSTRAINED), $ROCM_TAG"
