"""RunPlans and the command lines and engine calls they become."""
from dnnbench.runs import plan as plan_mod
from dnnbench.containers.engines import common, docker


def _plan(**kw):
    base = dict(runtime="docker", workload="resnet50", run_id="r1", run_dir="/res/r1", image="dnnbench:ngc-24.10",
                argv=["python", "-m", "dnnbench.workloads", "resnet50", "--data", "/data"],
                env={"DNNBENCH_RUN_ID": "r1"}, accelerator="nvidia", gpus=["0", "1"], user="1000:1000",
                mounts=[plan_mod.Mount("/imagenet", "/data", True), plan_mod.Mount("/res/r1", "/results")],
                ipc="host", ulimits={"memlock": -1, "stack": 67108864})
    base.update(kw)
    return plan_mod.RunPlan(**base)


def test_docker_line():
    line = plan_mod.command_line(_plan())
    assert "--gpus '\"device=0,1\"'" in line
    assert "-v /imagenet:/data:ro" in line and "-v /res/r1:/results " in line
    assert "--ulimit=memlock=-1:-1" in line and "--ulimit=stack=67108864:67108864" in line
    assert "--ipc=host" in line and "--user 1000:1000" in line and "--init" in line


def test_apptainer_line_nvidia_and_rocm():
    line = plan_mod.command_line(_plan(runtime="singularity", image="/x.sif"), "apptainer")
    assert line.startswith("apptainer exec --cleanenv")
    assert "--nv" in line and "--bind /imagenet:/data:ro" in line and "--env CUDA_VISIBLE_DEVICES=0,1" in line
    amd = plan_mod.command_line(_plan(runtime="singularity", image="/x.sif", accelerator="amd"), "apptainer")
    assert "--rocm" in amd and "HIP_VISIBLE_DEVICES=0,1" in amd and "--nv" not in amd


def test_plan_round_trips_through_json(tmp_path):
    p = _plan()
    p.save(tmp_path / "plan.json")
    import json
    assert plan_mod.RunPlan.from_dict(json.loads((tmp_path / "plan.json").read_text())) == p


def test_device_requests_and_rocm_devices():
    kw = docker.create_kwargs(_plan())
    (req,) = kw["device_requests"]
    assert req["DeviceIDs"] == ["0", "1"] and req["Capabilities"] == [["gpu"]]
    assert docker.create_kwargs(_plan(gpus=["all"]))["device_requests"][0]["Count"] == -1
    amd = docker.create_kwargs(_plan(accelerator="amd"))
    assert "device_requests" not in amd
    assert amd["devices"] == ["/dev/kfd:/dev/kfd:rwm", "/dev/dri:/dev/dri:rwm"]
    assert amd["group_add"] == ["video"] and amd["security_opt"] == ["seccomp=unconfined"]
    assert {(u["Name"], u["Soft"], u["Hard"]) for u in kw["ulimits"]} == {("memlock", -1, -1), ("stack", 67108864, 67108864)}
    assert kw["init"] is True and kw["mounts"][0]["ReadOnly"] is True


def test_parallel_copy_limits():
    kw = docker.create_kwargs(_plan(cpuset="0,1", memory="4096m"))
    assert kw["cpuset_cpus"] == "0,1" and kw["mem_limit"] == "4096m"
    assert " taskset -c 2,3 python -m dnnbench.workloads" in plan_mod.command_line(_plan(runtime="host", cpuset="2,3"))


def test_no_gpus_no_device_request():
    assert "device_requests" not in docker.create_kwargs(_plan(gpus=None))


def test_a_container_name_is_its_run_folders_own():
    """Docker names are global to a daemon; run ids are not (every suite has an r1): two results
    folders with one run id get two names, the same folder the same name, in the docker line and
    in what the SDK creates."""
    a, b = _plan(run_dir="/res/a/r1"), _plan(run_dir="/res/b/r1")
    assert common.container_name(a) != common.container_name(b)
    assert common.container_name(a) == common.container_name(_plan(run_dir="/res/a/r1"))
    assert common.container_name(a).startswith("dnnbench-r1-")
    assert f"--name {common.container_name(a)} " in plan_mod.command_line(a)
    assert docker.create_kwargs(a)["name"] == common.container_name(a)


def test_the_callers_thread_settings_reach_a_docker_run(tmp_path):
    """Docker passes no environment on by itself; OpenMP's wait policy and thread counts change
    CPU figures 2x, so the caller's reach the container as they reach a host or Apptainer run."""
    from tests.helpers import cli_inprocess
    code, out, err = cli_inprocess("run", "resnet18", "--image", "dnnbench-test:local", "--results", tmp_path,
                                   "--run-id", "t", "--dry-run",
                                   env={"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "3", "OMP_BOGUS": "x"})
    assert code == 0, err
    line = " ".join(out.split())
    assert "-e OMP_WAIT_POLICY=PASSIVE" in line and "-e OMP_NUM_THREADS=3" in line and "OMP_BOGUS" not in line


def test_the_docker_line_gives_an_amd_gpu_what_the_sdk_gives():
    """The AMD devices, group and seccomp setting are written once: the pasteable line and the
    SDK's create arguments agree."""
    plan = _plan(accelerator="amd")
    line, kw = plan_mod.command_line(plan), docker.create_kwargs(plan)
    for device in kw["devices"]:
        assert f"--device={device.split(':')[0]}" in line
    assert f"--group-add={kw['group_add'][0]}" in line and f"--security-opt={kw['security_opt'][0]}" in line
    assert kw["environment"]["HIP_VISIBLE_DEVICES"] == "0,1" and "--gpus" not in line


def test_every_runtime_name_reaches_its_engine():
    """A plan's runtime is an engine's name; `--runtime` takes its aliases too, and every engine
    draws its own line (the host one with no image in it)."""
    from dnnbench.containers.engines import ENGINES, named
    from dnnbench.runs.options import RUNTIMES
    assert set(RUNTIMES) == {n for e in ENGINES.values() for n in e.names}
    for name in RUNTIMES:
        engine = named(name)
        assert name in engine.names
        line = plan_mod.command_line(_plan(runtime=engine.name, image=None if not engine.contained else "/x.sif"))
        assert "-m dnnbench.workloads resnet50" in line
        assert ("/x.sif" in line) == engine.contained
