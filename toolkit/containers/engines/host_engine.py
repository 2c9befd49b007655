"""`--runtime host`: bare metal, this Python and its PyTorch, no image (also as a Slurm step:
the nodes' Python at the same path, on a shared filesystem)."""
from __future__ import annotations

import os
import shlex
import sys
from typing import TYPE_CHECKING

from dnnbench.containers.engines.common import HOST_WHY, Engine, Job, Plan, pinned

if TYPE_CHECKING:
    from dnnbench.containers.resolve import RunImage


def host_env(plan: Plan) -> dict:
    env = dict(plan.env)
    if plan.gpus and plan.gpus != ["all"]:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(plan.gpus)
    return env


class Host(Engine):
    name = "host"
    contained = False
    slurm = True
    inherits_env = True

    def available(self) -> str | None:
        return sys.version.split()[0]

    def resolve(self, image: str | None, base: str | None, build: bool | None) -> RunImage:
        from dnnbench.containers import resolve
        return resolve.host()

    def planned(self, image: str | None, base: str | None) -> RunImage:
        return self.resolve(image, base, False)

    def why(self, image: str | None, base: str | None) -> str:
        return HOST_WHY

    def slurm_image(self, image: str | None, base: str | None, dry_run: bool) -> RunImage:
        from dnnbench.containers import resolve
        return resolve.RunImage(ref=None, base=None, python=sys.executable, accelerator="nvidia")

    def rerun_image(self, ran: str | None, recorded: dict) -> str | None:
        return None

    def job(self, plan: Plan, environ: dict | None = None) -> tuple[Job, str]:
        from dnnbench.containers.engines.process import ProcessJob
        env = {**(os.environ if environ is None else environ), **host_env(plan)}
        return ProcessJob(pinned(plan, plan.argv), env=env, cwd=plan.workdir), self.command_line(plan)

    def command_line(self, plan: Plan, exe: str | None = None) -> str:
        env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in host_env(plan).items())
        return (env + " " if env else "") + shlex.join(pinned(plan, plan.argv))

    def slurm_step(self, plan: Plan) -> list[str]:
        return list(plan.argv)


ENGINE = Host()
