"""Examples are promises: every `dnnbench ...` example in the README, the guide and in the CLI's own help
texts runs here, as written, on stand-ins for what this machine lacks: small ILSVRC archives
for `~/downloads`, a fake ImageNet for `/imagenet`, and `--dry-run` where the example needs a
GPU, a registry or a cluster."""
from __future__ import annotations

import re
import shlex

import pytest

from tests import ilsvrc
from tests.helpers import ROOT, dnnbench

NEEDS_DRY_RUN = {"run", "slurm", "build", "train", "compare-images", "bisect", "suite", "watch"}


def readme_examples() -> list[str]:
    text = "\n".join(p.read_text(encoding="utf-8")
                     for p in [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))])
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip()
            # syntax summaries (`dnnbench run WORKLOAD [--data DIR ...]`) are not examples
            if line.startswith("dnnbench ") and "[" not in line and "WORKLOAD" not in line:
                found.append(" ".join(line.split()))
    return found


def help_examples() -> list[str]:
    from dnnbench.cli import app, runs
    texts = [runs.RUN_HELP, runs.SLURM_HELP, runs.TRAIN_HELP, app.info.help]
    found = []
    for text in texts:
        text = text.replace("\\\n", " ")   # continued lines
        found += [m.strip() for m in re.findall(r"^\s+(dnnbench [^(\n]+)", text, flags=re.M)]
        found += re.findall(r"`(dnnbench [^`]+)`", text)
    return [" ".join(f.split()) for f in found]


def test_the_examples_are_found():
    assert len(readme_examples()) >= 8
    assert len(help_examples()) >= 7


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    """What the examples' paths name, made small and real."""
    root = tmp_path_factory.mktemp("examples")
    downloads = root / "downloads"
    downloads.mkdir()
    ilsvrc.make(downloads)
    fake = root / "imagenet"
    dnnbench("data", "fake", "imagenet", "--to", fake, "--images", 16, "--classes", 2, "--size", 32, check=0)
    results = root / "results"
    run = dnnbench("run", "resnet18", "--runtime", "host", "--results", results, "--run-id", "example",
                   "--batch-size", 2, "--number", 1, "--repeat", 1, "--warmup", 0, "--profile", "torch", "-q",
                   cwd=root, check=0, timeout=900)
    assert run.returncode == 0
    # a user's script, as a file and as a checkout with its main.py
    script = ROOT / "tests" / "fixtures" / "scripts" / "imagenet_like.py"
    checkout = root / "examples" / "imagenet"
    checkout.mkdir(parents=True)
    (checkout / "main.py").write_bytes(script.read_bytes())
    return {"~/downloads": str(downloads), "train.py": str(script), "main.py": str(checkout / "main.py"),
            "~/examples/imagenet": str(checkout), "DIGITS": str(fake), "/data/imagenet": str(root / "prepared"), "/imagenet": str(fake),
            "results/<run-id>": str(results / "example"), "results/": str(results) + "/",
            "suites/": str(ROOT / "suites") + "/"}


def _as_run_here(example: str, stand_ins: dict, tmp_path) -> list[str]:
    pattern = "|".join(re.escape(p) for p in sorted(stand_ins, key=len, reverse=True))
    example = re.sub(pattern, lambda m: stand_ins[m.group(0)], example)   # one pass: no nested replacing
    argv = shlex.split(example, comments=True)[1:]   # a comment is the shell's, not an argument
    cut = argv.index("--") if "--" in argv else len(argv)   # what follows `--` is the script's
    ours, theirs = argv[:cut], argv[cut:]
    if ours[0] in NEEDS_DRY_RUN and "--dry-run" not in ours:
        ours.append("--dry-run")
    if ours[0] in ("run", "slurm", "train", "compare-images", "bisect") and "--results" not in ours:
        ours += ["--results", str(tmp_path)]
    return ours + theirs


@pytest.mark.parametrize("source", ["readme", "help"])
def test_every_example_runs(source, stand_ins, tmp_path):
    examples = readme_examples() if source == "readme" else help_examples()
    failures = []
    for example in examples:     # in order: `data prepare` comes before the `data verify` of its output
        argv = _as_run_here(example, stand_ins, tmp_path)
        # a dry run names the newest dnnbench image the daemon holds, whatever other tests or
        # sessions built last (a ROCm stand-in refuses --profile ncu): here it sees no daemon
        env = {"DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"} if argv[0] in NEEDS_DRY_RUN else None
        # a .sif a run's dry run looks for: a stand-in file for that example alone (slurm's dry run
        # reads a .sif's header, or plans a placeholder where there is none)
        sifs = [tmp_path / a for a in argv if argv[0] == "run" and a.endswith(".sif") and "/" not in a]
        for sif in sifs:
            sif.touch()
        res = dnnbench(*argv, cwd=tmp_path, env=env, timeout=600)
        for sif in sifs:
            sif.unlink()
        ok = res.returncode == 0 or (argv[0] == "doctor" and res.returncode == 1)
        if not ok or "Traceback" in res.stderr:
            failures.append(f"{example}\n  -> exit {res.returncode}: {res.stderr.strip()[-400:]}")
    assert not failures, "\n".join(failures)
