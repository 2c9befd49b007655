"""The Docker engine, through the docker SDK (docker-py).

Builds use the low-level APIClient so progress can be shown live and every chunk checked for
`error` (the SDK never raises on a failed RUN). Runs are detached, streamed, and always removed.
"""
from __future__ import annotations

import re
import secrets
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from dnnbench.containers.engines.common import Plan, chain, container_name
from dnnbench.errors import DnnbenchError, EngineUnavailable
from dnnbench.workloads import fileio

HINT_DAEMON = ("cannot reach the Docker engine ({why}); start it (`systemctl start docker`, "
               "or `sudo bash scripts/setup-engines.sh` on Debian) or set DOCKER_HOST")
HINT_PERMISSION = ("the Docker engine at {where} refuses this user (permission denied on its socket): "
                   "add the user to the `docker` group (`sudo usermod -aG docker $USER`, then log in again), "
                   "or use rootless Docker, or --runtime singularity|host")


def _denied(exc: BaseException) -> bool:
    """Whether a connection error is the socket's permission, however deep the SDK wrapped it."""
    seen = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, PermissionError) or "permission denied" in str(at).lower():
            return True
        at = at.__cause__ or at.__context__
    return False


# Every API call has a time limit: control calls (ping, inspect, create, start, kill, remove)
# answer in milliseconds, so a daemon silent for CONTROL_S is wedged, and the command ends with
# one line saying so. Streams that may rightly be quiet for long (build output, a run's logs)
# use their own client with STREAM_S.
CONTROL_S = 30
STREAM_S = 24 * 3600


def client(timeout: float = CONTROL_S):
    """A docker client, or a clear error if the daemon cannot be reached or does not answer."""
    import os
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        import docker
        c = docker.from_env(timeout=timeout)
        if timeout > CONTROL_S:
            c.api.timeout = CONTROL_S      # the ping is a control call
            c.ping()
            c.api.timeout = timeout
        else:
            c.ping()
        return c
    except DnnbenchError:
        raise
    except Exception as exc:  # DockerException wraps connection errors in many shapes
        if _denied(exc):
            raise EngineUnavailable(HINT_PERMISSION.format(where=where)) from None
        if "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower():
            raise EngineUnavailable(f"the Docker daemon at {where} did not answer in {CONTROL_S} s: it is "
                                    f"running but wedged (restart it: systemctl restart docker)") from None
        why = str(exc).split("\n")[0]
        why = re.sub(r"\(.*$", "", why).strip() or type(exc).__name__
        raise EngineUnavailable(HINT_DAEMON.format(why=why)) from None


def unreachable() -> str | None:
    """Why the engine cannot be reached (the hint to act on), or None when it can."""
    try:
        client()
    except DnnbenchError as exc:
        return str(exc)
    return None


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
    api = client(STREAM_S).api     # a build step may be quiet for minutes
    log_path.parent.mkdir(parents=True, exist_ok=True)
    image_id = None
    with fileio.open_write(str(log_path)) as log:    # a planted link is refused, not written through
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
    """dnnbench-built images (those carrying `label`). One call to the daemon's image list, whose
    entries hold all this needs: docker-py's `images.list` inspects each listed image again, and
    one removed in between (another user's `docker rmi`, a test's release images) ended the
    listing in a traceback."""
    images = client().images
    for entry in images.client.api.images(filters={"label": label}):
        img = images.prepare_model(entry)    # docker-py's own tags and short id, from the entry
        created = entry.get("Created")
        yield {"tags": img.tags, "id": img.short_id, "labels": entry.get("Labels") or {},
               "size": entry.get("Size", 0),
               "created": datetime.fromtimestamp(created, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
               if isinstance(created, int) else ""}


HINT_NO_NVIDIA = ("Docker has no NVIDIA runtime, so it cannot give GPUs to a container: install the "
                  "NVIDIA Container Toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker` "
                  "then restart docker; or drop --gpus to run on the CPU")


def explain_run_error(message: str) -> str:
    low = message.lower()
    if "could not select device driver" in low:
        return HINT_NO_NVIDIA
    if "no such file or directory" in low and "/dev/kfd" in low:
        return "this machine has no /dev/kfd: the ROCm kernel driver (amdgpu) is not loaded"
    if "bind source path does not exist" in low:
        return f"a mount source is missing: {message.split(':', 1)[-1].strip()}"
    return message.strip()


# what a ROCm GPU needs in a container: its devices, their group, and no seccomp filter
AMD_DEVICES = ("/dev/kfd", "/dev/dri")
AMD_GROUP = "video"
AMD_SECURITY = "seccomp=unconfined"


def _ulimit_flag(name: str, value) -> str:
    return f"--ulimit={name}={value}:{value}"


def docker_command(plan: Plan) -> list[str]:
    """The `docker run` line equivalent to what the SDK does for this plan (create_kwargs)."""
    cmd = ["docker", "run", "--rm", "--init", "--name", container_name(plan)]
    if plan.user:
        cmd += ["--user", plan.user]
    if plan.ipc:
        cmd += [f"--ipc={plan.ipc}"]
    if plan.shm_size:
        cmd += [f"--shm-size={plan.shm_size}"]
    cmd += [_ulimit_flag(k, v) for k, v in plan.ulimits.items()]
    cmd += [f"--cap-add={c}" for c in plan.cap_add]
    if plan.cpuset:
        cmd += [f"--cpuset-cpus={plan.cpuset}"]
    if plan.memory:
        cmd += [f"--memory={plan.memory}"]
    if plan.gpus and plan.accelerator == "nvidia":
        cmd += ["--gpus", "all" if plan.gpus == ["all"] else f'"device={",".join(plan.gpus)}"']
    if plan.accelerator == "amd" and plan.gpus:
        cmd += [f"--device={d}" for d in AMD_DEVICES] + [f"--group-add={AMD_GROUP}", f"--security-opt={AMD_SECURITY}"]
    for m in plan.mounts:
        cmd += ["-v", f"{m.source}:{m.target}" + (":ro" if m.read_only else "")]
    for k, v in plan.env.items():
        cmd += ["-e", f"{k}={v}"]
    argv = chain(plan)
    cmd += ["-w", plan.workdir, "--entrypoint", argv[0], plan.image or "IMAGE"] + argv[1:]
    return cmd


def command_line(plan: Plan) -> str:
    return shlex.join(docker_command(plan))


def digest(ref: str) -> dict:
    """The image's id and repo digests (the id is what `docker run` takes to get this exact image)."""
    try:
        attrs = client().images.get(ref).attrs
    except Exception as exc:  # noqa: BLE001 - a manifest without a digest beats no run
        return {"ref": ref, "id": None, "repo_digests": [], "problem": str(exc)[:200]}
    return {"ref": ref, "id": attrs.get("Id"), "repo_digests": list(attrs.get("RepoDigests") or [])}


def create_kwargs(plan) -> dict:
    """docker SDK `containers.create` arguments for a RunPlan."""
    from docker.types import DeviceRequest, Mount, Ulimit

    kwargs = dict(
        image=plan.image, entrypoint=plan.entrypoint + plan.argv[:1], command=plan.argv[1:], environment=dict(plan.env),
        working_dir=plan.workdir, user=plan.user or "", init=True, detach=True,
        name=container_name(plan), labels={"io.dnnbench.run-id": plan.run_id},
        mounts=[Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only) for m in plan.mounts],
        ulimits=[Ulimit(name=k, soft=int(v), hard=int(v)) for k, v in plan.ulimits.items()] or None,
        cap_add=list(plan.cap_add) or None, ipc_mode=plan.ipc, shm_size=plan.shm_size,
        cpuset_cpus=plan.cpuset, mem_limit=plan.memory,
    )
    if plan.gpus and plan.accelerator == "nvidia":
        if plan.gpus == ["all"]:
            kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        else:
            kwargs["device_requests"] = [DeviceRequest(device_ids=list(plan.gpus), capabilities=[["gpu"]])]
    elif plan.gpus and plan.accelerator == "amd":
        kwargs.update(devices=[f"{d}:{d}:rwm" for d in AMD_DEVICES], group_add=[AMD_GROUP],
                      security_opt=[AMD_SECURITY])
        if plan.gpus != ["all"]:
            kwargs["environment"]["HIP_VISIBLE_DEVICES"] = ",".join(plan.gpus)
    return {k: v for k, v in kwargs.items() if v is not None}


RUN_LABEL = "io.dnnbench.run-id"
OWNER_LABEL = "io.dnnbench.owner"    # the claim that made it: only its maker removes it by name


class ContainerJob:
    """A RunPlan as a detached container: streamed, waited on, signalled, always removed.
    Everything after the create goes by the container's name, so a container is removed even
    when docker-py's create (two API calls) made it and then failed to describe it."""

    output_goes_with_cleanup = True   # its lines are read from the container, which cleanup removes

    def __init__(self, plan, owner: str | None = None):
        self.plan = plan
        self.name = container_name(plan)
        self.owner = owner or secrets.token_hex(8)
        self.container = None
        self._client = None

    @property
    def identity(self) -> dict:
        return {"container": self.name, "owner": self.owner}

    def carry(self, name: str, value: str) -> None:
        """Nothing: the container's owner label proves it the run's."""

    def started_as(self) -> dict | None:
        return None    # the claim's record names the container already

    @property
    def api(self):
        if self._client is None:
            self._client = client()
        return self._client.api

    def create(self):
        import docker
        kwargs = create_kwargs(self.plan)
        kwargs["labels"] = {**kwargs.get("labels", {}), OWNER_LABEL: self.owner}
        self.api  # noqa: B018 - reach the engine first: an unreachable one is its own error
        try:
            self.container = self._client.containers.create(**kwargs)
        except docker.errors.ImageNotFound:
            raise DnnbenchError(f"image {self.plan.image} is not on this machine "
                                f"(`dnnbench build --base ...` makes one, `dnnbench images` lists them)") from None
        except docker.errors.APIError as exc:
            raise DnnbenchError(f"docker could not create the container: "
                                f"{explain_run_error(str(exc.explanation or exc))}") from None
        return self.container

    def start(self) -> None:
        import docker
        if self.container is None:
            self.create()
        try:
            self.api.start(self.name)
        except docker.errors.APIError as exc:
            message = str(exc.explanation or exc)
            if "rlimit" in message and "memlock" in self.plan.ulimits and not self.plan.notes:
                self._lower_memlock()
                return self.start()
            raise DnnbenchError(f"docker could not start the run: {explain_run_error(message)}") from None

    def _lower_memlock(self) -> None:
        """NGC asks for memlock=-1; a daemon whose own limit is lower (rootless Docker, many
        VMs) cannot grant it and the start fails. Run with the most the daemon can give, say so
        once, and note it in the result."""
        remove_owned(self.api, self.name, self.owner)
        self.container = None
        wanted = self.plan.ulimits.pop("memlock")
        granted = daemon_memlock()
        if granted is not None:
            self.plan.ulimits["memlock"] = granted
        note = (f"memlock {wanted} was not granted by the Docker daemon (its own limit is lower); ran with "
                f"{'memlock ' + str(granted) if granted is not None else 'the daemon default'}")
        self.plan.notes.append(note)
        from dnnbench.console import warn
        warn(note)

    def lines(self):
        pending = b""
        stream = client(STREAM_S).api     # a run may print nothing for a long time
        for chunk in stream.logs(self.name, stream=True, follow=True, stdout=True, stderr=True):
            pending += chunk
            *done, pending = pending.split(b"\n")
            for raw in done:
                yield raw.decode("utf-8", errors="replace").rstrip("\r")
        if pending:
            yield pending.decode("utf-8", errors="replace")

    def wait(self, timeout: float) -> int | None:
        import docker
        import requests
        try:
            return int(self.api.wait(self.name, timeout=max(1, int(round(timeout))))["StatusCode"])
        except (requests.exceptions.RequestException, OSError):
            return None
        except docker.errors.NotFound:   # removed behind our back: it ran no more
            return 137

    def _signal(self, sig: str) -> None:
        import docker
        import requests
        try:
            self.api.kill(self.name, signal=sig)
        except docker.errors.APIError:   # NotFound, or not running any more
            pass
        except requests.exceptions.RequestException:   # a wedged daemon: the next step escalates
            pass

    def interrupt(self) -> None:
        self._signal("SIGINT")

    def terminate(self) -> None:
        self._signal("SIGTERM")

    def kill(self) -> None:
        self._signal("SIGKILL")

    def cleanup(self) -> None:
        """Remove the container if this job made it (its owner label says so)."""
        if self._client is None:
            return
        remove_owned(self.api, self.name, self.owner)


def daemon_memlock() -> int | None:
    """The local dockerd's own hard RLIMIT_MEMLOCK in bytes (what its containers may get at
    most), or None when it cannot be read (a remote or rootless daemon)."""
    try:
        pid = int(fileio.read_text("/var/run/docker.pid", max_bytes=64).strip())
        for line in fileio.read_text(f"/proc/{pid}/limits", max_bytes=16384).splitlines():
            if line.startswith("Max locked memory"):
                hard = line.split()[4]
                return None if hard == "unlimited" else int(hard)
    except (OSError, ValueError, IndexError):
        return None
    return None


def remove_owned(api, name: str, owner: str | None = None, run_dir: str | None = None) -> bool:
    """Force-remove container `name` if it is the one `owner` made, or (for a dead owner's
    orphan) one whose /results mount is `run_dir`. True if one was removed."""
    import docker
    import requests
    for attempt in range(30):
        try:
            info = api.inspect_container(name)
        except docker.errors.NotFound:
            return attempt > 0
        except (docker.errors.APIError, requests.exceptions.RequestException):
            return False
        labels = (info.get("Config") or {}).get("Labels") or {}
        sources = {m.get("Source") for m in info.get("Mounts") or []}
        # a dead owner's record is data: its container is removed only if it also mounts this
        # very run folder, so a forged owner.json cannot name somebody else's container
        labelled = bool(owner) and labels.get(OWNER_LABEL) == owner
        if not (labelled and (run_dir is None or run_dir in sources)):
            return False
        try:
            api.remove_container(name, force=True)
            return True
        except docker.errors.NotFound:
            return True
        except docker.errors.APIError:   # 409: a removal already in progress; wait for it
            time.sleep(1.0)
        except requests.exceptions.RequestException:
            return False
    return False


def latest_image(label: str) -> dict | None:
    """The most recently built image carrying `label`, or None."""
    found = sorted(list_images(label), key=lambda i: i["created"], reverse=True)
    return next((i for i in found if i["tags"]), None)
