"""`dnnbench doctor`: what can run here, and what to do about what cannot."""
from __future__ import annotations

import shutil
import subprocess


from dnnbench.console import Column, escape, print_table


def _cmd(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def nvidia_gpus() -> list[str]:
    from dnnbench.runs.gpus import visible
    return [f"{g['index']}, {g['name']}, {g['uuid']}" for g in visible("nvidia") or []]


def amd_gpus() -> list[str]:
    text = _cmd(["rocm-smi", "--showproductname", "--csv"])
    return [line for line in (text or "").splitlines()[1:] if line.strip()]


def docker_runtimes() -> list[str]:
    from dnnbench.containers.engines import docker
    try:
        return sorted((docker.client().info().get("Runtimes") or {}).keys())
    except Exception:
        return []


def doctor_command() -> int:
    """Print the checks; return 0 when at least one engine can run workloads."""
    from dnnbench.containers.engines import apptainer, docker

    table = _Rows()
    dv = docker.available()
    why = docker.unreachable()
    table.add_row("docker engine", f"[green]{escape(dv)}[/]" if dv else "[red]unreachable[/]",
                  "" if dv else escape(why or "start dockerd; or use --runtime singularity|host"))
    av = apptainer.available()
    table.add_row("apptainer/singularity", f"[green]{escape(av)}[/]" if av else "[red]missing[/]",
                  "" if av else "install Apptainer (`sudo bash scripts/setup-engines.sh`) or `module load apptainer`")
    nv, amd = nvidia_gpus(), amd_gpus()
    table.add_row("NVIDIA GPUs (nvidia-smi)", escape("\n".join(nv)) or "none",
                  "" if nv or not shutil.which("nvidia-smi") else "nvidia-smi found no GPU: check the driver")
    table.add_row("AMD GPUs (rocm-smi)", escape("\n".join(amd)) or "none", "")
    if dv and nv:
        runtimes = docker_runtimes()
        ok = "nvidia" in runtimes or shutil.which("nvidia-container-cli")
        table.add_row("NVIDIA container toolkit", "[green]present[/]" if ok else "[red]missing[/]",
                      "" if ok else "install nvidia-container-toolkit, then `nvidia-ctk runtime configure --runtime=docker`")
    try:
        import torch
        tv = f"{torch.__version__} (cuda {torch.version.cuda or '-'}, {torch.cuda.device_count()} GPUs visible)"
    except Exception:
        tv = None
    table.add_row("PyTorch on the host", escape(tv or "not installed"),
                  "" if tv else escape("only needed for --runtime host: pip install 'dnnbench[torch]'"))
    print_table("dnnbench doctor", [Column("piece", rank=9), Column("status", decides=True), Column("hint", rank=8)],
                table.rows)
    return 0 if (dv or av or tv) else 1


class _Rows:
    """The checks' rows, in the order they ran."""

    def __init__(self):
        self.rows: list[list[str]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))
