"""Extension points fail where they are defined: every registry refuses a second entry of a name
or alias taken already, an engine or job kind that lacks what every one must say cannot be made,
and a Slurm engine without its Slurm step fails when its class is defined."""
import pytest

from dnnbench.registry import DuplicateEntry, Registry


def _registries():
    from dnnbench.cli.host_options import OPTIONS
    from dnnbench.containers.engines import ENGINES
    from dnnbench.profilers import PROFILERS
    from dnnbench.results.formats import FORMATS
    from dnnbench.runs.kinds import KINDS
    from dnnbench.runs.schedulers import SCHEDULERS
    return {"engine": ENGINES, "job kind": KINDS, "profiler": PROFILERS, "report format": FORMATS,
            "host option": OPTIONS, "scheduler": SCHEDULERS}


@pytest.mark.parametrize("what", sorted(_registries()))
def test_every_registry_refuses_a_name_taken_twice(what):
    table = _registries()[what]
    assert isinstance(table, Registry)
    before = dict(table)
    first = next(iter(table.values()))
    with pytest.raises(DuplicateEntry, match="taken already"):
        table.register(first)
    with pytest.raises(TypeError):
        table[next(iter(table))] = first
    assert dict(table) == before     # nothing half-added


def test_an_engine_alias_taken_by_another_engine_is_refused():
    from dnnbench.containers.engines import ENGINES, register
    from dnnbench.containers.engines.host_engine import Host

    class Bare(Host):
        name = "bare"
        aliases = ("apptainer",)      # the singularity engine's alias
    with pytest.raises(DuplicateEntry, match="'apptainer' is taken already"):
        register(Bare())
    assert "bare" not in ENGINES and ENGINES.lookup("apptainer").name == "singularity"


@pytest.mark.parametrize("name, aliases", [("podman", "pod"), ("Docker", ()), ("pod man", ()), ("--x", ()),
                                           ("podman", ("",)), ("podman", ("ok", 3)), ("", ())])
def test_an_engine_name_no_user_can_type_after_runtime_fails_when_defined(name, aliases):
    from dnnbench.containers.engines import ENGINES
    from dnnbench.containers.engines.host_engine import Host
    before = dict(ENGINES)
    with pytest.raises(TypeError, match="--runtime name|tuple of names"):
        type("Odd", (Host,), {"name": name, "aliases": aliases})
    assert dict(ENGINES) == before and ENGINES.lookup("p") is None


def test_an_engine_missing_what_every_engine_says_cannot_be_made():
    from dnnbench.containers.engines.common import Engine

    class Half(Engine):
        name = "half"

        def available(self):
            return None
    with pytest.raises(TypeError, match="abstract"):
        Half()


def test_a_slurm_engine_without_its_step_fails_when_defined():
    from dnnbench.containers.engines.common import Engine
    with pytest.raises(TypeError, match="slurm_image or slurm_step"):
        class Cluster(Engine):        # noqa: F841 (defining it is the test)
            name = "cluster"
            slurm = True
    with pytest.raises(TypeError, match="`name`"):
        class Nameless(Engine):       # noqa: F841
            pass


def test_a_job_kind_missing_what_every_kind_says_cannot_be_made():
    from dnnbench.runs.kinds import Benchmark, JobKind
    with pytest.raises(TypeError, match="workdir, requeues, resumes"):
        class Named(JobKind):         # noqa: F841
            name = "named"

    class NoReadBack(JobKind):
        name, workdir, requeues, resumes = "nrb", "/w", False, False
    with pytest.raises(TypeError, match="abstract"):
        NoReadBack()

    class Sweep(Benchmark):           # a new kind from an old one: only its name differs
        name = "sweep"
    assert Sweep().read_back is Benchmark().read_back


def test_every_kind_reads_its_own_results_back():
    from dnnbench.runs import read_back as reproduce
    from dnnbench.runs.kinds import KINDS, of_result
    made = {"run": {}, "train": {"training": {}}, "script": {"script": {}}}
    assert set(made) == set(KINDS)
    for name, data in made.items():
        assert of_result(data) is KINDS[name]
    assert {k.read_back for k in KINDS.values()} == {reproduce.BENCHMARK_READ_BACK, reproduce.TRAINING_READ_BACK,
                                                     reproduce.SCRIPT_READ_BACK}


def test_a_second_scheduler_is_one_module_behind_the_interface():
    """What a placement asks of a scheduler, answered by a stand-in queue: the follow, the two
    looks and the cancel are the interface's, not Slurm's."""
    from dnnbench.runs.schedulers import Scheduler, Watch

    class Queue(Scheduler):
        name, script, submit_command = "queue", "job.sh", "true"
        live = frozenset({"QUEUED", "RUNNING"})
        answers = ["QUEUED", "RUNNING", "DONE", "DONE"]
        sent: list = []

        def submit(self, script):
            return "1"

        def submit_waiting(self, script):
            raise NotImplementedError

        def state(self, job):
            return self.answers.pop(0) if self.answers else ""

        def signal(self, job, name):
            self.sent.append(name)

        def cancel(self, job):
            self.sent.append("cancel")

        def exit_code(self, job, fallback):
            return 0

        def shown_by(self, job):
            return f"`queue show {job}`"

    class Never:
        count = 0

        def sleep(self, seconds):
            pass

    class Waiter:
        def poll(self):
            return None
    q = Queue()
    q.look_s = q.look_late_s = 0
    watch = Watch(q, "1", Waiter(), Never(), 0.0)
    assert [watch.ended() for _ in range(3)] == [False, False, True]
    assert watch.states == ["QUEUED", "RUNNING", "DONE"]
    q.answers = ["RUNNING", "", ""]
    q.cancel_grace = 0.0
    q.stop_job("1", Never(), lambda: None)
    assert q.sent[0] == "INT"

    class Half(Scheduler):
        name, script, submit_command, live = "half", "j", "true", frozenset()
    with pytest.raises(TypeError, match="abstract"):
        Half()
