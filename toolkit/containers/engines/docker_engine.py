"""`--runtime docker`: a container from a local image through the Docker daemon (docker.py)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from dnnbench.containers.engines.common import ONLY_IMAGE, Engine, Job, Plan, why_chosen

if TYPE_CHECKING:
    from dnnbench.containers.resolve import RunImage


class Docker(Engine):
    name = "docker"
    env_defaults = {"HOME": "/tmp"}    # the run's uid may have no home in the image
    sees_machine = False               # inside, the hostname is the container's id

    def available(self) -> str | None:
        from dnnbench.containers.engines import docker
        return docker.available()

    def preflight(self) -> None:
        from dnnbench.containers.engines import docker
        docker.client()

    def check_ref(self, image: str) -> None:
        from dnnbench import names
        names.image_ref(image)

    def resolve(self, image: str | None, base: str | None, build: bool | None) -> RunImage:
        from dnnbench.containers import resolve
        self.preflight()
        return resolve.resolve_docker(image, base, build)

    def planned(self, image: str | None, base: str | None) -> RunImage:
        from dnnbench.containers import resolve
        why = self.why(image, base)
        if image or base:
            return resolve.planned(image, base, why)
        return resolve.planned_docker() or resolve.planned(None, None, why)

    def why(self, image: str | None, base: str | None) -> str:
        return why_chosen(image, base, ONLY_IMAGE)

    def has_image(self, ref: str) -> bool | None:
        from dnnbench.containers.engines import docker
        from dnnbench.errors import DnnbenchError
        try:
            return docker.image_labels(ref) is not None
        except DnnbenchError:    # no engine to ask: the dry run says nothing of it
            return None

    def digest(self, ref: str) -> dict | None:
        from dnnbench.containers.engines import docker
        return docker.digest(ref)

    def rerun_image(self, ran: str | None, recorded: dict) -> str | None:
        if recorded.get("id"):
            return recorded["id"]
        from dnnbench.console import warn
        warn(f"the result records no image digest (an older result): running the tag {ran}")
        return ran

    def settings(self, facts: dict, *, counters: bool, memory: str | None) -> dict:
        return {"user": f"{os.getuid()}:{os.getgid()}", "ipc": facts.get("ipc"),
                "ulimits": dict(facts.get("ulimits") or {}),
                # GPU performance counters need SYS_ADMIN in a container, and only while profiling.
                "cap_add": ["SYS_ADMIN"] if counters else [], "memory": memory}

    def job(self, plan: Plan, environ: dict | None = None) -> tuple[Job, str]:
        from dnnbench.containers.engines.docker import ContainerJob
        return ContainerJob(plan), self.command_line(plan)

    def command_line(self, plan: Plan, exe: str | None = None) -> str:
        from dnnbench.containers.engines import docker
        return docker.command_line(plan)


ENGINE = Docker()
