"""Against the real Docker engine: builds, runs, mounts, signals, GPU requests, failures."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace

import pytest

from dnnbench.containers import catalog, recipes

from dnnbench.runs import plan as plan_mod
from dnnbench.errors import DnnbenchError
from tests.helpers import dnnbench, one_line_error

pytestmark = pytest.mark.engine
TINY = ["--batch-size", "4", "--number", "2", "--repeat", "2", "--warmup", "1"]


def _docker_run(image, *cmd):
    return subprocess.run(["docker", "run", "--rm", "--entrypoint", cmd[0], image, *cmd[1:]],
                          capture_output=True, text=True, timeout=300)


def test_built_image_imports_dnnbench_and_torch_and_carries_labels(built_image, test_base):
    res = _docker_run(built_image, "python3", "-c", "import dnnbench, dnnbench.workloads, torch; print(torch.__version__)")
    assert res.returncode == 0 and res.stdout.startswith("2.14.1"), res.stderr
    labels = json.loads(subprocess.run(["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", built_image],
                                       capture_output=True, text=True, check=True).stdout)
    from dnnbench.containers.build import image_config, with_image_facts
    # a local base's entrypoint and arch come from its image, as the build reads them
    base = with_image_facts(catalog.resolve(f"local:{test_base}")[0], image_config(test_base))
    recipe = recipes.render(base, "docker")
    assert labels[recipes.LABEL_SHA] == recipe.sha256
    assert labels[recipes.LABEL_BASE] == f"local:{test_base}"
    listed = dnnbench("images", check=0).stdout
    assert built_image.split(":", 1)[1][:20] in listed and recipe.sha256[:12] in listed


def test_failed_run_step_gives_one_line_and_keeps_the_log(test_base, tmp_path):
    from dnnbench.containers.build import docker_build
    base = replace(catalog.resolve(f"local:{test_base}")[0], apt=("dnnbench-no-such-package",))
    with pytest.raises(DnnbenchError) as info:
        docker_build(base, tag="dnnbench-test:failing", log_dir=tmp_path)
    assert "docker build failed" in str(info.value) and "non-zero code" in str(info.value)
    assert os.path.exists(info.value.log) and "dnnbench-no-such-package" in open(info.value.log).read()


def test_missing_base_image(docker_engine, tmp_path):
    res = dnnbench("build", "--base", "local:dnnbench-no-such-image:1", "--log-dir", tmp_path)
    line = one_line_error(res, "dnnbench-no-such-image")
    assert "not available locally" in line or "pull access denied" in line or "could not be pulled" in line
    assert "details:" in res.stderr and list(tmp_path.glob("*.log"))


def test_cpu_run_writes_a_valid_result_through_the_mount(built_image, tmp_path, fake_imagenet):
    res = dnnbench("run", "resnet18", "--image", built_image, "--data", fake_imagenet, "--workers", "1",
                   "--results", tmp_path, "--run-id", "r1", *TINY, check=0)
    run_dir = tmp_path / "r1"
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "ok" and data["synthetic"] is False and data["system"]["container"] is True
    assert data["host"]["runtime"] == "docker" and data["host"]["exit_code"] == 0
    assert data["system"]["image"] == built_image
    assert json.loads((run_dir / "plan.json").read_text())["mounts"][0] == {
        "source": str(fake_imagenet), "target": "/data", "read_only": True}
    assert "[resnet18] window 2/2" in (run_dir / "log.txt").read_text()
    assert "resnet18" in res.stdout and "ok" in res.stdout
    st = os.stat(run_dir / "result.json")
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())   # the caller's, not the container's


def test_data_mount_is_read_only_inside(built_image, tmp_path, fake_imagenet):
    from dnnbench.runs.launch import RunOptions, build_plan, execute
    plan = build_plan(RunOptions(workload="resnet18", data=fake_imagenet, image=built_image, results=tmp_path,
                                 run_id="ro"))
    plan.argv = ["python3", "-c", "open('/data/intruder', 'w')"]
    data, code = execute(plan, quiet=True)
    assert code != 0 and data["status"] == "error"
    assert "Read-only file system" in (tmp_path / "ro" / "log.txt").read_text()
    assert not (fake_imagenet / "intruder").exists()


def _containers(run_id):
    return subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label=io.dnnbench.run-id={run_id}"],
                          capture_output=True, text=True, check=True).stdout.split()


def _unique(prefix):
    """Container names are global to the daemon, which other checkouts' tests share."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.signals
def test_ctrl_c_leaves_no_container_and_keeps_the_result(built_image, tmp_path):
    run_id = _unique("cc")
    proc = subprocess.Popen([sys.executable, "-m", "dnnbench", "run", "resnet18", "--image", built_image,
                             "--results", str(tmp_path), "--run-id", run_id, "--batch-size", "2",
                             "--number", "5", "--repeat", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = tmp_path / run_id / "log.txt"
    deadline = time.monotonic() + 600   # bounded, generous: a busy 2-core machine is slow
    while time.monotonic() < deadline and proc.poll() is None and not (log.exists() and "warmup done" in log.read_text()):
        time.sleep(0.5)
    assert _containers(run_id), "the run's container never started"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 130, out
    assert _containers(run_id) == []
    data = json.loads((tmp_path / run_id / "result.json").read_text())
    assert data["status"] == "interrupted"


@pytest.mark.signals
def test_timeout_stops_and_removes_the_container(built_image, tmp_path):
    run_id = _unique("to")
    res = dnnbench("run", "resnet18", "--image", built_image, "--results", tmp_path, "--run-id", run_id,
                   "--timeout", "8", "--batch-size", "2", "--number", "5", "--repeat", "1000")
    assert res.returncode == 124, res.stderr
    assert json.loads((tmp_path / run_id / "result.json").read_text())["status"] == "timeout"
    assert _containers(run_id) == []


def test_gpu_request_is_formed_and_refused_helpfully(built_image, tmp_path):
    """No NVIDIA runtime here: the created container carries the request; starting it is
    refused with a hint instead of docker's 'could not select device driver'."""
    from dnnbench.containers.engines.docker import HINT_NO_NVIDIA, ContainerJob
    run_id = _unique("gpureq")
    plan = plan_mod.RunPlan(runtime="docker", workload="resnet18", run_id=run_id, run_dir=str(tmp_path),
                            image=built_image, argv=["python3", "-c", "pass"], accelerator="nvidia",
                            gpus=["0", "1"], user=f"{os.getuid()}:{os.getgid()}")
    job = ContainerJob(plan)
    try:
        container = job.create()
        container.reload()
        (req,) = container.attrs["HostConfig"]["DeviceRequests"]
        assert req["DeviceIDs"] == ["0", "1"] and req["Capabilities"] == [["gpu"]]
        assert container.attrs["HostConfig"]["Init"] is True
        try:
            job.start()
            runtimes = subprocess.run(["docker", "info", "-f", "{{json .Runtimes}}"], capture_output=True, text=True).stdout
            assert "nvidia" in runtimes, "docker started a GPU container without an NVIDIA runtime"
        except DnnbenchError as exc:
            assert HINT_NO_NVIDIA in str(exc)
    finally:
        job.cleanup()
    assert _containers(run_id) == []


def test_two_process_gloo_ddp_in_a_container(built_image, tmp_path):
    dnnbench("run", "resnet18", "--image", built_image, "--nproc", "2", "--results", tmp_path, "--run-id", "ddp",
             *TINY, check=0)
    data = json.loads((tmp_path / "ddp" / "result.json").read_text())
    assert data["status"] == "ok" and data["world_size"] == 2 and len(data["ranks"]) == 2
    per = data["throughput"]["per_gpu"]["value"]
    assert data["throughput"]["total"]["value"] == pytest.approx(2 * per)


def test_missing_image_and_base_tag(built_image, tmp_path):
    one_line_error(dnnbench("run", "resnet18", "--image", "dnnbench:nope", "--results", tmp_path), "not on this machine")
    res = dnnbench("run", "resnet18", "--dry-run", "--base", "cpu", "--results", tmp_path, check=0)
    assert "dnnbench:cpu" in res.stdout


def test_memlock_the_daemon_cannot_grant_runs_with_what_it_can(built_image, tmp_path):
    """NGC's --ulimit memlock=-1 on a daemon whose own limit is lower (this machine's dockerd:
    8 MiB) once failed at container start ("error setting rlimit type 8")."""
    from dnnbench.containers.engines import docker as docker_engine
    from dnnbench.runs.launch import RunOptions, build_plan, execute
    run_id = _unique("memlock")
    plan = build_plan(RunOptions(workload="resnet18", image=built_image, results=tmp_path, run_id=run_id))
    plan.ulimits = {"memlock": -1}
    plan.argv = ["sh", "-c", "ulimit -l"]
    data, code = execute(plan, quiet=True)
    granted = docker_engine.daemon_memlock()
    if granted is None:       # a daemon that grants unlimited: nothing to lower, nothing to say
        assert data["host"]["exit_code"] == 0 and not data["host"].get("notes")
        return
    assert data["host"]["exit_code"] == 0, (tmp_path / run_id / "log.txt").read_text()
    assert "memlock -1 was not granted" in data["host"]["notes"][0]
    assert str(granted // 1024) in (tmp_path / run_id / "log.txt").read_text()   # `ulimit -l` is in KiB
    assert not _containers(run_id)


def test_the_image_listing_asks_the_daemon_once_so_a_removal_meanwhile_cannot_end_it(built_image, monkeypatch):
    """`images`, the dry run and `latest_image` list dnnbench's images in one call: docker-py's
    `images.list` inspected each listed image again, and an image removed in between (the
    release images another test removed) ended `run --dry-run` in a traceback."""
    from dnnbench.containers.engines import docker
    api = docker.client().api
    asked = []
    real = api.inspect_image
    monkeypatch.setattr(api, "inspect_image", lambda *a, **k: asked.append(a) or real(*a, **k))
    found = list(docker.list_images(recipes.LABEL_BASE))
    assert asked == [] and any(built_image in i["tags"] for i in found)
    ours = next(i for i in found if built_image in i["tags"])
    assert ours["id"] == docker.client().images.get(built_image).short_id and ours["labels"][recipes.LABEL_BASE]
    assert ours["created"][:19] == real(built_image)["Created"][:19] and ours["size"] > 0


def test_the_dry_run_line_names_the_image_a_run_takes_and_can_be_pasted(built_image, tmp_path):
    """Without --image the dry run follows a real run's rule: the only dnnbench image, named (not
    a placeholder), or, with several, one error line listing them (none guessed); the printed
    line, pasted into a shell, runs and leaves a result."""
    from dnnbench.containers.engines import docker
    res = dnnbench("run", "resnet18", "--results", tmp_path, "--run-id", "dry", "--dry-run", check=None)
    tags = sorted(i["tags"][0] for i in docker.list_images(recipes.LABEL_BASE) if i["tags"])
    if len(tags) == 1:
        line = res.stdout.strip().splitlines()[-1]
        assert res.returncode == 0 and "<the dnnbench image>" not in line and f" {tags[0]} " in line
    else:       # other checkouts' or tests' images beside ours: refused, the candidates named
        one_line_error(res, "none is guessed")
        assert "--image" in res.stderr and (built_image in res.stderr or len(tags) > 4)   # (a long list is cut)
    run_id = _unique("paste")
    res = dnnbench("run", "resnet18", "--image", built_image, "--results", tmp_path, "--run-id", run_id,
                   "--batch-size", "2", "--number", "1", "--repeat", "1", "--warmup", "0", "--dry-run", check=0)
    line = res.stdout.strip().splitlines()[-1]
    (tmp_path / run_id).mkdir()
    pasted = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=600)
    assert pasted.returncode == 0, pasted.stderr[-2000:]
    assert json.loads((tmp_path / run_id / "result.json").read_text())["status"] == "ok"
