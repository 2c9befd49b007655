"""`dnnbench slurm`: the script it writes, and that script run by a real Slurm (Debian's slurm-wlm
and munge, started by scripts/setup-slurm.sh) whose nodes are network and UTS namespaces of this
machine, each with its own address, hostname and slurmd, and a Debian /etc/hosts that maps its
own name to 127.0.1.1: torchrun agents on different hosts meeting at the c10d rendezvous, gloo
between them over the veth links."""
from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, dnnbench, one_line_error, until_line

SMALL = ["--batch-size", "4", "--number", "2", "--repeat", "2", "--warmup", "1"]


def _script(*args):
    res = dnnbench("slurm", "resnet18", "--dry-run", *args, check=0)
    subprocess.run(["bash", "-n"], input=res.stdout, text=True, check=True)   # it parses as bash
    return res.stdout


def test_script_for_gpu_nodes(tmp_path):
    text = _script("--nodes", "4", "--gpus-per-node", "8", "--partition", "gpu", "--time", "1:30:00",
                   "--account", "proj1", "--sbatch-arg=--qos=high", "--setup", "module load apptainer",
                   "--env", "NCCL_SOCKET_IFNAME=ib0", "--image", "x.sif", "--results", tmp_path, "--run-id", "r1",
                   "--scaling", "--amp", "fp16", "--", "--lr", "0.1")
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=1:30:00", "#SBATCH --account=proj1",
                 f"#SBATCH --output={tmp_path}/r1/slurm-%j.out", "module load apptainer"):
        assert line + "\n" in text, line
    assert text.index("--qos=high") > text.index("--account=proj1")      # extra options come last
    main = text[text.rindex("srun --kill-on-bad-exit=1"):]
    assert "apptainer exec --cleanenv" in main and " --nv " in main
    assert f"--bind {tmp_path}/r1:/results" in main and "--env NCCL_SOCKET_IFNAME=ib0" in main
    for part in ("torch.distributed.run --nnodes=${SLURM_NTASKS} --nproc_per_node=8", "--rdzv_backend=c10d",
                 "--rdzv_endpoint=${HEAD_ADDR}:${PORT}", "--device cuda", "--amp fp16", "--lr 0.1",
                 "--scaling-reference /results/reference/result.json"):
        assert part in " ".join(main.replace("\\\n", " ").split()), part
    ref = text[text.index("srun --nodes=1 --ntasks=1"):text.rindex("srun --kill-on-bad-exit=1")]
    assert "torch.distributed.run" not in ref and "--results /results/reference" in ref
    assert not (tmp_path / "r1").exists()                                    # dry run: nothing written


def test_script_for_cpu_on_the_nodes_python(tmp_path):
    text = _script("--nproc-per-node", "3", "--runtime", "host", "--results", tmp_path, "--run-id", "r2")
    assert "--gpus-per-node" not in text and "apptainer" not in text
    assert f"{sys.executable} -m torch.distributed.run" in text and "--nproc_per_node=3" in text
    assert "--device cpu" in text and "reference" not in text


@pytest.mark.parametrize("args, fragments", [
    (["--time", "1h"], ["--time '1h'"]),
    (["--gpus-per-node", "2", "--nproc-per-node", "2"], ["--nproc-per-node is for CPU runs"]),
    (["--runtime", "docker"], ["'docker' is not one of 'singularity', 'apptainer', 'host'"]),
    (["--wait"], ["--wait goes with --submit"]),
    (["--partition", "a b"], ["--partition 'a b'"]),
    (["--sbatch-arg", "qos=high"], ["--sbatch-arg=--qos=high"]),
    (["--env", "NOVALUE"], ["--env 'NOVALUE'"]),
    # names the job's machinery sets: a value given here would be overwritten or believed
    (["--env", "DNNBENCH_RUN_ID=../x"], ["--env DNNBENCH_RUN_ID: set for each process by dnnbench"]),
    (["--env", "APPTAINERENV_A=1"], ["--env APPTAINERENV_A", "give the name itself"]),
    (["--env", "SLURM_PROCID=3"], ["--env SLURM_PROCID", "by Slurm"]),
    (["--env", "CUDA_VISIBLE_DEVICES=1"], ["--env CUDA_VISIBLE_DEVICES", "--gpus-per-node"]),
    (["--env", "WORLD_SIZE=8"], ["--env WORLD_SIZE", "by torchrun"]),
    (["--env", "PET_NNODES=2"], ["--env PET_NNODES", "by torchrun"]),
    (["--image", "/nope.sif"], ["no such .sif"]),
    (["--nodes", "0"], ["--nodes", "must be between 1 and"]),
    (["--epochs", "3"], ["--epochs is a training option: add --train"]),
    (["--train", "--runtime", "host"], ["training needs --data"]),
    (["--train", "--runtime", "host", "--data", "/nonexistent", "--scaling"], ["--scaling", "--train trains epochs"]),
    (["--train", "--runtime", "host", "--data", "/", "--resume"], ["resumes from the run folder's newest"]),
    (["--train", "--runtime", "host", "--data", "/", "--number", "5"], ["--number times benchmark windows"]),
    (["--train", "--runtime", "host", "--data", "/", "--warn-before", "5"], ["--warn-before"]),
    (["--train", "--runtime", "host", "--data", "/", "--time", "1", "--warn-before", "60"],
     ["--warn-before 60 s is not less than --time 1 (60 s)"]),
    (["--train", "--runtime", "host", "--data", "/", "--time", "0-1", "--warn-before", "3600"], ["(3600 s)"]),
])
def test_mistakes_get_one_line(args, fragments, tmp_path):
    one_line_error(dnnbench("slurm", "resnet18", "--results", tmp_path, *args), *fragments)
    assert list(tmp_path.iterdir()) == []


def test_script_for_training(tmp_path, digits):
    """--train: requeue instead of --no-requeue, the warning signal to the script, one log across
    the starts, the training entry with --resume left to the script (a checkpoint present)."""
    text = _script("--train", "--runtime", "host", "--data", digits, "--time", "4:00:00",
                   "--warn-before", "300", "--target-accuracy", "75", "--epochs", "40", "--results", tmp_path,
                   "--run-id", "tr")
    for line in ("#SBATCH --requeue", "#SBATCH --signal=B:USR1@300", "#SBATCH --open-mode=append"):
        assert line + "\n" in text, line
    assert "--no-requeue" not in text and "trap " in text and 'scontrol requeue "$SLURM_JOB_ID"' in text
    assert "no checkpoint was written in this start: not requeued" in text     # never requeued for ever
    # the resume is decided by the run folder's checkpoint record, read as `train --resume` reads it
    words = " ".join(text.replace("\\\n", " ").split())
    assert f"-m dnnbench.workloads.checkpoint {tmp_path}/tr ||" in words and "checkpoint-*.pt" not in text
    main = " ".join(text[text.rindex("srun --kill-on-bad-exit=1"):].replace("\\\n", " ").split())
    for part in ("-m dnnbench.workloads.train resnet18", "--target-accuracy 75", "--epochs 40", "${RESUME} &"):
        assert part in main, part


# A name assigned in a job script: at a line's or a command's start, or as "NAME=..." exported
# by a loop. A function's `local` one leaves the caller's alone; NodeAddr is a pattern grep
# looks for, not a variable.
_ASSIGNED = re.compile(r"(?:^|[\s;(\"'])(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?!=)")
_NOT_ASSIGNED = {"NodeAddr"}


@pytest.mark.parametrize("variant", [
    ["--image", "x.sif", "--nodes", "2", "--gpus-per-node", "4", "--scaling"],
    ["--runtime", "host", "--nproc-per-node", "2"],
    ["--runtime", "host", "--nodes", "3", "--each-node"],
    ["--runtime", "host", "--train", "--data", "DIGITS", "--time", "1:00:00"],
], ids=["apptainer-gpus-scaling", "host", "each-node", "train"])
def test_every_name_a_job_script_sets_is_refused_by_env(variant, tmp_path, digits):
    """--env may not give a variable the job's machinery sets (dnnbench, Slurm, torchrun or the
    script): the script would change it before the tasks start, or code would believe it. The
    names are read off the scripts written, so a variable the script sets tomorrow fails here
    until the owner table (dnnbench.runs.environment) names it."""
    from functools import partial

    from dnnbench.runs.environment import owner_of as owner
    owner_of = partial(owner, slurm=True)
    args = [str(digits) if a == "DIGITS" else a for a in variant]
    text = _script(*args, "--env", "NCCL_DEBUG=INFO", "--results", tmp_path, "--run-id", "r")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assigned = set(_ASSIGNED.findall(body)) - _NOT_ASSIGNED - set(re.findall(r"\blocal\s+(\w+)", body))
    assigned |= set(re.findall(r"--env ([A-Za-z_][A-Za-z0-9_]*)=", body))     # into the container
    assert {"HEAD_ADDR", "PORT", "NCCL_DEBUG"} <= assigned                    # the scan reads them
    unowned = sorted(n for n in assigned - {"NCCL_DEBUG"} if owner_of(n) is None)
    assert unowned == [], f"set by the job script, yet --env would take them: {unowned}"
    assert owner_of("NCCL_DEBUG") is None and owner_of("OMP_NUM_THREADS") is None
    res = dnnbench("slurm", "resnet18", "--dry-run", *args, "--env", "PORT=1", "--results", tmp_path, check=2)
    assert res.returncode == 2 and "--env PORT: set for each process by the job script" in res.stderr, res.stderr


def test_without_sbatch_the_script_is_still_written(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty)}                                             # no sbatch on it
    line = one_line_error(dnnbench("slurm", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "r",
                                   "--submit", env=env), "sbatch is not on PATH")
    assert str(tmp_path / "r" / "job.sbatch") in line and (tmp_path / "r" / "job.sbatch").is_file()
    assert not list((tmp_path / "r").glob("slurm-*.out"))


# --- a real Slurm ------------------------------------------------------------------

def _result(run_dir):
    return json.loads((run_dir / "result.json").read_text())


def _hosts(data):
    return sorted(r["host"] for r in data["ranks"])


@pytest.mark.engine
def test_two_nodes_meet_at_the_rendezvous_and_write_one_result(slurm_cluster, tmp_path):
    """Two nodes, one agent each. The script before this one named the rendezvous by hostname and
    left gloo to the hostname's address: on these nodes (Debian's 127.0.1.1) it ended in
    "Gloo connectFullMesh failed ... remote=[127.0.1.1]"."""
    res = dnnbench("slurm", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "x2",
                   "--nodes", "2", "--scaling", "--submit", "--wait", *SMALL, check=0)
    run = tmp_path / "x2"
    data = _result(run)
    assert data["status"] == "ok" and data["world_size"] == 2
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    assert _hosts(data) == ["node1", "node2"]
    assert all(r["throughput"]["value"] > 0 for r in data["ranks"])
    job = data["host"]["slurm_job"]
    assert data["host"]["runtime"] == "slurm/host" and data["host"]["exit_code"] == 0
    log = (run / f"slurm-{job}.out").read_text()
    assert "2 agents on node[1-2], rendezvous 10.77.0.11:" in log
    assert "task 0 on node1 (10.77.0.11), rendezvous host" in log and "task 1 on node2 (10.77.0.12)" in log
    assert "[resnet18 rank 0]" in res.stderr                     # the job's log was followed
    # Scaling efficiency: in the result (against the reference step) and in the report.
    assert _result(run / "reference")["world_size"] == 1
    eff = data["scaling"]["efficiency"]
    assert 0 < eff < 2 and data["scaling"]["reference_run"] == "x2-reference"
    rep = json.loads(dnnbench("report", tmp_path, "--format", "json", check=0).stdout)
    two = next(j for j in rep["jobs"] if j["world_size"] == 2)
    one = next(j for j in rep["jobs"] if j["world_size"] == 1)
    assert two["scaling"] == pytest.approx(two["throughput"] / (2 * one["throughput"]))
    assert "scaling eff." in dnnbench("report", tmp_path, "--format", "csv", check=0).stdout


@pytest.mark.engine
def test_apptainer_steps_on_two_nodes(slurm_cluster, built_sif, tmp_path, fake_imagenet):
    """`apptainer exec` on two nodes: the addresses reach the container through --cleanenv.
    (Three nodes at once: the --each-node test.)"""
    dnnbench("slurm", "resnet18", "--image", built_sif, "--data", fake_imagenet, "--workers", "0",
             "--results", tmp_path, "--run-id", "sif", "--nodes", "2", "--submit", "--wait", *SMALL, check=0)
    data = _result(tmp_path / "sif")
    assert data["status"] == "ok" and data["world_size"] == 2 and data["synthetic"] is False
    assert _hosts(data) == ["node1", "node2"]
    assert data["options"]["data"] == "/data"
    assert data["host"]["runtime"] == "slurm/singularity"


@pytest.mark.engine
@pytest.mark.signals
def test_ctrl_c_cancels_the_job_on_every_node_and_keeps_a_result(slurm_cluster, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "dnnbench", "slurm", "resnet18", "--runtime", "host",
                             "--results", str(tmp_path), "--run-id", "cut", "--nodes", "2", "--submit", "--wait",
                             "--batch-size", "2", "--number", "1000", "--repeat", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = None
    deadline = time.monotonic() + 600           # bounded, generous: a busy 2-core machine is slow
    while log is None and time.monotonic() < deadline and proc.poll() is None:
        logs = list((tmp_path / "cut").glob("slurm-*.out")) if (tmp_path / "cut").exists() else []
        if logs and "warmup done" in logs[0].read_text():
            log = logs[0]
        time.sleep(0.5)
    assert log is not None, "the job did not start training"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err
    assert "SIGINT sent to job" in err
    job = log.name[len("slurm-"):-len(".out")]
    assert subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip() == ""
    data = _result(tmp_path / "cut")
    assert data["status"] == "interrupted" and data["host"]["ended"] == "interrupted"
    assert _left_running(tmp_path / "cut") == []


def _left_running(run_dir):
    """Processes (on any node: they share this machine's process table) still naming the run."""
    res = subprocess.run(["pgrep", "-af", str(run_dir)], capture_output=True, text=True)
    return [line for line in res.stdout.splitlines() if "pgrep" not in line]


@pytest.mark.engine
def test_a_users_ddp_script_across_two_tasks(slurm_cluster, tmp_path):
    """`slurm --script`: the user's DDP script, unchanged, under one torchrun agent per task
    meeting at the rendezvous; one result with both ranks, the script's hash and arguments."""
    script = ROOT / "tests" / "fixtures" / "scripts" / "ddp.py"
    dnnbench("slurm", "--script", script, "--runtime", "host", "--results", tmp_path, "--run-id", "s2",
             "--sbatch-arg=--ntasks-per-node=2", "--number", "2", "--repeat", "3", "--warmup", "1",
             "--submit", "--wait", check=0)
    data = _result(tmp_path / "s2")
    assert data["status"] == "ok" and data["world_size"] == 2 and data["workload"] == "script-ddp"
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    assert data["script"]["sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    assert data["host"]["runtime"] == "slurm/host"


def _start_long_job(tmp_path, run_id, *extra):
    """A 2-node job that trains until stopped; returns (process, log path) once it is timing."""
    proc = subprocess.Popen([sys.executable, "-m", "dnnbench", "slurm", "resnet18", "--runtime", "host",
                             "--results", str(tmp_path), "--run-id", run_id, "--nodes", "2", "--submit", "--wait",
                             "--batch-size", "2", "--number", "1000", "--repeat", "10", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600           # bounded, generous: a busy 2-core machine is slow
    while time.monotonic() < deadline and proc.poll() is None:
        logs = list((tmp_path / run_id).glob("slurm-*.out")) if (tmp_path / run_id).exists() else []
        if logs and "warmup done" in logs[0].read_text():
            return proc, logs[0]
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"the job did not start training: {proc.communicate()[1][-2000:]}")


@pytest.mark.engine
@pytest.mark.signals
def test_a_lost_node_ends_the_job_and_the_result_names_it(slurm_cluster, tmp_path):
    """node2 dies mid-job (its slurmd and every process in its namespace, SIGKILL): rank 0 sees
    the connection close, Slurm declares the node failed after SlurmdTimeout (30 s here), the
    job ends, and the result says which node and rank were lost; nothing is left on node1."""
    proc, log = _start_long_job(tmp_path, "lost")
    try:
        pids = subprocess.run(["ip", "netns", "pids", "dnnbench-node2"], capture_output=True, text=True).stdout
        subprocess.run(["kill", "-9", *pids.split()], check=True)
        out, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
        back = subprocess.run(["bash", str(ROOT / "scripts" / "setup-slurm.sh"), "--nodes", str(len(slurm_cluster))],
                              capture_output=True, text=True)      # node2 back for the tests after this one
        assert back.returncode == 0, back.stdout + back.stderr
    assert proc.returncode == 1, err
    data = _result(tmp_path / "lost")
    assert data["status"] == "error"
    assert data["lost_nodes"][0]["node"] == "node2" and data["lost_nodes"][0]["ranks"] == [1]
    assert data["message"].startswith("lost node node2 (rank 1): Slurm: node failure")
    assert "error: lost node node2 (rank 1)" in err and "Traceback" not in err.split("error: lost node")[1]
    # rank 0 says it in one line (the traceback left is torchrun's own ChildFailedError)
    assert "error: a collective failed: another rank stopped answering" in err and "harness.py" not in err
    assert sorted(p["host"] for p in data["placement"]) == ["node1", "node2"]
    job = data["host"]["slurm_job"]
    assert subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip() == ""
    assert _left_running(tmp_path / "lost") == []
    assert "Restarts=0" in subprocess.run(["scontrol", "show", "job", job], capture_output=True,
                                          text=True).stdout                # --no-requeue: not run again


class _SlowNode:
    """A node slowed on purpose: its slurmd (and so every process it starts from now on) in a
    cgroup with a CPU quota (a fifth of one core unless told); cgroup v2 or v1, whichever the
    machine has."""

    def __init__(self, node, quota_us=20000):
        self.pid = (Path("/run") / f"slurmd-{node}.pid").read_text().strip()
        v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
        self.root = Path("/sys/fs/cgroup") if v2 else Path("/sys/fs/cgroup/cpu")
        self.group = self.root / f"dnnbench-slow-{node}"
        self.group.mkdir(exist_ok=True)
        if v2:
            (self.root / "cgroup.subtree_control").write_text("+cpu")
            (self.group / "cpu.max").write_text(f"{quota_us} 100000")
        else:
            (self.group / "cpu.cfs_period_us").write_text("100000")
            (self.group / "cpu.cfs_quota_us").write_text(str(quota_us))
        (self.group / "cgroup.procs").write_text(self.pid)

    def undo(self):
        (self.root / "cgroup.procs").write_text(self.pid)
        for _ in range(60):                      # the job's processes leave with the job
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(1)


@pytest.mark.engine
def test_each_node_finds_the_slow_node(slurm_cluster, tmp_path):
    """`--each-node`: one run per node, all at once, each its own result. One round cannot tell a
    slow node from a busy moment: the fleet check (at the end of --wait, and in `report`) names
    no node but says the node held to a tenth of a core is below the median, inconclusive; a
    second --each-node run is a second round, and `report` over both names no other node (node2,
    or nothing with node2 said to be undecided)."""
    slow = _SlowNode("node2", quota_us=10000)
    try:
        res = dnnbench("slurm", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "fleet",
                       "--nodes", "3", "--each-node", "--submit", "--wait", "--batch-size", "2", "--number", "2",
                       "--repeat", "5", "--warmup", "1", check=0)
        again = dnnbench("slurm", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "fleet2",
                         "--nodes", "3", "--each-node", "--submit", "--wait", "--batch-size", "2", "--number", "2",
                         "--repeat", "5", "--warmup", "1", check=0)
    finally:
        slow.undo()
    runs = {p.parent.name: _result(p.parent) for p in (tmp_path / "fleet").glob("*/result.json")}
    assert sorted(runs) == slurm_cluster
    assert all(d["status"] == "ok" and d["run_id"] == f"fleet-{n}" and d["system"]["host"] == n
               for n, d in runs.items())
    for one in (res, again):
        assert "fleet check: inconclusive" in one.stderr and "slow host" not in one.stdout
        assert "host node2: " in " ".join(one.stdout.split())
    rep = json.loads(dnnbench("report", tmp_path / "fleet", tmp_path / "fleet2", "--format", "json",
                              check=0).stdout)
    (job,) = rep["jobs"]
    # two rounds: right or inconclusive, whatever the load (a t interval on one degree of freedom
    # names node2 only when its two rounds agree closely): never another node, and node2 either
    # named or said to be below the median, undecided
    assert job["n"] == 6 and [s["host"] for s in job["slow_hosts"]] in ([], ["node2"])
    if job["slow_hosts"]:
        assert job["slow_hosts"][0]["below_median_pct"] > 0 and job["slow_hosts"][0]["rounds"] == 2
    else:
        assert [line.split(":")[0] for line in job["undecided_hosts"]] == ["host node2"], job["undecided_hosts"]


@pytest.mark.engine
def test_a_slow_node_is_named_the_straggler_of_a_multi_node_job(slurm_cluster, tmp_path):
    """In synchronous training every rank's window lasts as long as the slowest rank's: the
    per-rank figure that shows the slow node is each rank's own step, timed before the windows."""
    slow = _SlowNode("node2")
    try:
        dnnbench("slurm", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "strag",
                 "--nodes", "2", "--submit", "--wait", *SMALL, check=0)
    finally:
        slow.undo()
    data = _result(tmp_path / "strag")
    by_host = {r["host"]: r for r in data["ranks"]}
    assert by_host["node2"]["local_step_s"] > 1.3 * by_host["node1"]["local_step_s"]
    v = data["verdict"]
    assert v["label"] == "straggler" and "on node2" in " ".join(v["evidence"]) and "node2" in v["hint"]


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    from dnnbench.datasets.digits import write_digits
    return write_digits(tmp_path_factory.mktemp("digits"))


def _warned_at_a_checkpoint(proc, start: int) -> str:
    """Slurm's warning before the time limit (USR1 to the batch script: `#SBATCH --signal=B:USR1`),
    sent by the test once start `start` of the job has written a checkpoint: at a step the run
    has reached, never after a time (a time limit's start on a busy machine may not reach one).
    `scancel --batch` signals the batch script alone, as Slurm's warning does. The job id."""
    line = until_line(proc, lambda ln: f"] start {start} of job " in ln)
    job = line.split(" of job ")[1].split()[0]
    until_line(proc, lambda ln: "checkpoint: checkpoint-" in ln)
    subprocess.run(["scancel", "--batch", "--signal=USR1", job], check=True, timeout=60)
    return job


@pytest.mark.engine
def test_training_is_requeued_at_the_time_limit_and_resumes_to_the_target(slurm_cluster, tmp_path, digits):
    """`slurm --train`: Slurm's warning signal before the time limit makes the job checkpoint and
    requeue itself, each start resumes from the newest checkpoint, and the run goes on to its
    end: each epoch counted once, every start's host and Slurm restart kept, only time on the
    clock in the time to target. The warning is sent at a checkpoint of the first two starts
    (the limit itself, 30 min, is never reached), so three starts whatever the load; the
    target can only be reached in the last (evaluated at the 4th epoch alone)."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dnnbench", "slurm", "resnet18", "--train", "--runtime", "host",
                             "--data", str(digits), "--image-size", "32", "--batch-size", "32", "--workers", "0",
                             "--epochs", "4", "--eval-every", "4", "--target-accuracy", "50", "--time", "30",
                             "--warn-before", "60",
                             "--results", str(tmp_path), "--run-id", "t", "--submit", "--wait"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job = _warned_at_a_checkpoint(proc, 1)   # in epoch 2 at the latest: 2 and more are left
        assert _warned_at_a_checkpoint(proc, 2) == job   # epoch 2's end: epochs 3 and 4 are left
        _, err = proc.communicate(timeout=1500)
    finally:
        proc.kill()
    wall = time.monotonic() - started
    run = tmp_path / "t"
    script = (run / "job.sbatch").read_text()
    assert "#SBATCH --requeue\n" in script and "#SBATCH --signal=B:USR1@60\n" in script
    assert "#SBATCH --time=30\n" in script and "--no-requeue" not in script
    data = _result(run)
    assert proc.returncode == 0, err[-3000:]
    t = data["training"]
    # evaluated at the 4th epoch alone: the target (about two epochs' worth) is reached there, in
    # the third start, or the epochs ran out; either way the run ends at epoch 4
    assert data["status"] == "ok" and t["best"] is not None and len(t["epochs"]) == 4
    assert not t["reached"] or t["reached_at_epoch"] == 4
    assert len(t["segments"]) == 3 and data["host"]["slurm_job"] == job
    # on an idle node the job may start before the first look: PENDING is then seen at the requeues only
    states = data["host"]["slurm_states"]
    assert states[:2] in (["PENDING", "RUNNING"], ["RUNNING", "PENDING"]) and states[-1] == "COMPLETED"
    assert data["host"]["slurm_states"].count("RUNNING") == len(t["segments"])   # each start seen
    assert [s["slurm_restart"] for s in t["segments"]] == list(range(len(t["segments"])))
    assert {s["slurm_job"] for s in t["segments"]} == {data["host"]["slurm_job"]}
    assert all(s["host"] == "node1" and s["ended"] for s in t["segments"])
    assert [e["epoch"] for e in t["epochs"]] == list(range(1, len(t["epochs"]) + 1))   # each once
    assert t["on_clock_s"] < wall and (not t["reached"] or t["time_to_target_s"] <= t["on_clock_s"])
    log = next(run.glob("slurm-*.out")).read_text()
    assert log.count("[dnnbench] requeued") == len(t["segments"]) - 1
    assert "resuming from the newest checkpoint" in log
    assert len(list(run.glob("checkpoint-*.pt"))) <= 2
    assert _left_running(run) == []
