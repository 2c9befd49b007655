"""The Docker engine, through the docker SDK (docker-py).

Builds use the low-level APIClient so progress can be shown live and every chunk checked for
`error` (the SDK never raises on a failed RUN). Runs are detached, streamed, and always removed.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable

from ..errors import DnnbenchError

HINT_DAEMON = ("cannot reach the Docker engine ({why}); start it (`systemctl start docker`, "
               "or `sudo bash scripts/setup-engines.sh` on Debian) or set DOCKER_HOST")


def client():
    """A docker client, or a clear error if the daemon cannot be reached."""
    try:
        import docker
        c = docker.from_env(timeout=600)
        c.ping()
        return c
    except DnnbenchError:
        raise
    except Exception as exc:  # DockerException wraps connection errors in many shapes
        why = str(exc).split("\n")[0]
        why = re.sub(r"\(.*$", "", why).strip() or type(exc).__name__
        raise DnnbenchError(HINT_DAEMON.format(why=why)) from None


def available() -> str | None:
    """The engine's version, or None when unreachable."""
    try:
        return client().version().get("Version")
    except DnnbenchError:
        return None


def image_labels(tag: str) -> dict | None:
    """Labels of a local image, or None if there is no such image."""
    import docker
    try:
        img = client().images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return dict(img.labels or {})


def _explain(message: str, base_image: str) -> str:
    low = message.lower()
    if "no space left" in low:
        return f"{message.strip()} (the disk holding Docker's data is full: `docker system prune` frees space)"
    if any(s in low for s in ("pull access denied", "manifest unknown", "not found: manifest",
                              "repository does not exist", "no such host", "dial tcp", "i/o timeout",
                              "tls handshake")) and "returned a non-zero code" not in low:
        return (f"the base image {base_image} is not available locally and could not be pulled: "
                f"{message.strip()}")
    return message.strip()


def build(context_dir: Path, *, tag: str, base_image: str, nocache: bool = False, pull: bool = False,
          buildargs: dict | None = None, log_path: Path,
          on_step: Callable[[str], None] = lambda s: None,
          on_pull: Callable[[dict], None] = lambda c: None) -> str:
    """Build context_dir/Dockerfile as `tag`; every chunk goes to log_path. Returns the image id."""
    api = client().api
    log_path.parent.mkdir(parents=True, exist_ok=True)
    image_id = None
    with open(log_path, "w", encoding="utf-8") as log:
        stream = api.build(path=str(context_dir), dockerfile="Dockerfile", tag=tag, rm=True, forcerm=True,
                           nocache=nocache, pull=pull, buildargs=buildargs or None, decode=True)
        try:
            for chunk in stream:
                if "stream" in chunk:
                    text = chunk["stream"]
                    log.write(text)
                    for line in text.splitlines():
                        if line.startswith("Step "):
                            on_step(line)
                elif "status" in chunk:
                    log.write(f"{chunk.get('id', '')} {chunk['status']} {chunk.get('progress', '')}\n".lstrip())
                    on_pull(chunk)
                elif "aux" in chunk:
                    image_id = chunk["aux"].get("ID", image_id)
                if "error" in chunk:
                    message = (chunk.get("errorDetail") or {}).get("message") or chunk["error"]
                    log.write(f"ERROR: {message}\n")
                    raise DnnbenchError(f"docker build failed: {_explain(message, base_image)}", log=str(log_path))
        except DnnbenchError:
            raise
        except Exception as exc:  # an API error before the stream starts (missing base with pull, ...)
            message = getattr(exc, "explanation", None) or str(exc)
            log.write(f"ERROR: {message}\n")
            raise DnnbenchError(f"docker build failed: {_explain(str(message), base_image)}", log=str(log_path)) from None
    if image_id is None:  # old daemons send no aux ID: ask for the tag instead
        image_id = client().images.get(tag).id
    return image_id


def list_images(label: str) -> Iterable[dict]:
    """dnnbench-built images (those carrying `label`)."""
    for img in client().images.list(filters={"label": label}):
        yield {"tags": img.tags, "id": img.short_id, "labels": img.labels or {},
               "size": img.attrs.get("Size", 0), "created": img.attrs.get("Created", "")}
