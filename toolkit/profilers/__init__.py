"""The profilers `--profile` offers: one module each (how the run is launched under it, which
files it leaves, how they are read and shown), listed once here. The CLI's choices, the launch
checks, the run folder's summary and `profile show` all read this table."""
from __future__ import annotations

from pathlib import Path

from . import ncu, nsys, nvprof, rocprof, torch_trace
from .common import Profiler, RunFolder
from dnnbench.registry import Registry

PROFILERS: Registry[Profiler] = Registry("profiler", (ncu.PROFILER, nsys.PROFILER, torch_trace.PROFILER,
                                                     nvprof.PROFILER, rocprof.PROFILER))
NAMES = tuple(PROFILERS)


def of(key: str) -> Profiler | None:
    """The profiler a summary key belongs to ("nvprof:nvprof-123" is nvprof's)."""
    return PROFILERS.get(key.split(":", 1)[0])


def summarize(run_dir: Path, result: dict | None = None) -> dict | None:
    """Every profile found in the run folder, summarized; None when there is none. What could not
    be read is listed under "problems"; files with no GPU activity (torchrun's parent under
    nvprof) are listed there too unless another file of the same profiler was read."""
    problems: list[str] = []
    window = sum(w.get("seconds", 0) for w in (result or {}).get("windows") or []) or None
    folder = RunFolder(run_dir, _launch(run_dir, problems), window, problems=problems)
    for p in PROFILERS.values():
        p.read(folder)
    found = folder.found
    skipped = [s for s in folder.skipped if not any(of(k) is of(s.split(": ", 1)[0]) for k in found)]
    if folder.problems or skipped:
        found["problems"] = folder.problems + skipped
    return found or None


def _launch(run_dir: Path, problems: list[str]) -> dict:
    """What the container launcher chose (kernel cap, clocks, dropped metrics); {} when it wrote
    nothing, or nothing readable (said in problems)."""
    from dnnbench.workloads import fileio
    path = run_dir / "profile" / "launch.json"
    if not path.is_file():
        return {}
    try:
        launch = fileio.read_json(str(path), max_bytes=1 << 20)
    except (ValueError, RecursionError, OSError) as exc:
        problems.append(f"launch.json: not readable JSON ({type(exc).__name__})")
        return {}
    if not isinstance(launch, dict):
        problems.append("launch.json: not a JSON object")
        return {}
    return launch


def readable(profile: dict | None) -> list[str]:
    """The profiles in a summary that hold something (not just problems)."""
    return [k for k in (profile or {}) if k != "problems"]
