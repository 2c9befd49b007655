"""`--runtime singularity` (= apptainer): `apptainer exec` on a .sif file (apptainer.py), also
as a Slurm step."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from dnnbench.containers.engines.common import Engine, Job, Mounted, Plan

if TYPE_CHECKING:
    from dnnbench.containers.resolve import RunImage


class Apptainer(Engine):
    name = "singularity"
    aliases = ("apptainer",)
    slurm = True

    def available(self) -> str | None:
        from dnnbench.containers.engines import apptainer
        return apptainer.available()

    def preflight(self) -> None:
        from dnnbench.containers.engines import apptainer
        apptainer.binary()

    def resolve(self, image: str | None, base: str | None, build: bool | None) -> RunImage:
        from dnnbench.containers import resolve
        self.preflight()
        return resolve.resolve_sif(image, base, build)

    def planned(self, image: str | None, base: str | None) -> RunImage:
        from dnnbench.containers import resolve
        from dnnbench.errors import DnnbenchError
        why = self.why(image, base)
        if image and not base and not Path(image).expanduser().exists():   # a dry run refuses what the run would
            raise DnnbenchError(f"no such .sif: {image} (`dnnbench build --format singularity` or "
                                f"`dnnbench pull` makes one)")
        if image or base:
            return resolve.planned(image, base, why)
        return resolve.planned_sif() or resolve.planned(None, None, why)

    def slurm_image(self, image: str | None, base: str | None, dry_run: bool) -> RunImage:
        from dnnbench.containers import resolve
        if dry_run and not (image and Path(image).is_file()):
            return resolve.RunImage(ref=image or "IMAGE.sif", base=base, python="python3", accelerator="nvidia")
        return resolve.resolve_sif(image, base, False)

    def has_image(self, ref: str) -> bool | None:
        return Path(ref).is_file()

    def digest(self, ref: str) -> dict | None:
        from dnnbench.containers.engines import apptainer
        return apptainer.sif_digest(ref)

    def rerun_image(self, ran: str | None, recorded: dict) -> str | None:
        from dnnbench.containers.engines import apptainer
        from dnnbench.errors import DnnbenchError
        if ran and recorded.get("sha256"):
            now = apptainer.sif_digest(ran).get("sha256")
            if now != recorded["sha256"]:
                raise DnnbenchError(f"{ran} is no longer the image of the result (its sha256 changed): pass "
                                    f"--image with the original .sif")
        return ran

    def check_mounts(self, mounts: Sequence[Mounted]) -> None:
        from dnnbench.containers.engines import apptainer
        for mount in mounts:
            apptainer.apptainer_bind(mount)

    def job(self, plan: Plan, environ: dict | None = None) -> tuple[Job, str]:
        from dnnbench.containers.engines import apptainer
        from dnnbench.containers.engines.process import ProcessJob
        exe = apptainer.binary()
        return ProcessJob(apptainer.apptainer_command(plan, exe)), self.command_line(plan, exe)

    def command_line(self, plan: Plan, exe: str | None = None) -> str:
        from dnnbench.containers.engines import apptainer
        return shlex.join(apptainer.apptainer_command(plan, exe or "apptainer"))

    def slurm_step(self, plan: Plan) -> list[str]:
        from dnnbench.containers.engines import apptainer
        exe = Path(apptainer.binary(required=False) or "apptainer").name   # the nodes' PATH finds it
        return apptainer.slurm_step(apptainer.apptainer_command(plan, exe))


ENGINE = Apptainer()
