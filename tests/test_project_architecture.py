"""The host side's shape: no import cycles between its modules (function-level imports
included: a cycle through a lazy import is still a cycle), packages that import only those
below them, the container side never importing the host side; the extension points
(profilers, engines) being one module and one table line each; and each test file named after
the package it checks, every one the docs name there."""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the guide page that says where each addition goes (the README links it)
DEVELOPMENT = ROOT / "docs" / "guide" / "development.md"
PACKAGES = {"dnnbench": ROOT / "toolkit", "dnnbench.workloads": ROOT / "workloads"}


def modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of ours that `name` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b` with a module a.b is `import a.b as b`: an edge to a.b alone;
            # a name that is no module is the package's own (its __init__)
            subs = {f"{base}.{alias.name}" for alias in node.names}
            targets.update(subs)
            if not subs <= known:
                targets.add(base)
    # `import a.b.c` also runs a and a.b; only edges to our own modules count
    return {t for t in targets if t in known and t != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    edges = {}
    for name, path in mods.items():
        # a package's __init__ runs when any submodule is imported: but an edge to it from its
        # own submodules is no cycle of ours unless __init__ imports them back
        edges[name] = imports(name, path, known)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_host_side_has_no_import_cycle():
    edges = graph()
    assert len(edges) > 30, "the module walk found too little"
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_container_side_never_imports_the_host_side():
    edges = graph()
    for name, targets in edges.items():
        if name.startswith("dnnbench.workloads"):
            host = {t for t in targets if not t.startswith("dnnbench.workloads") and t != "dnnbench"}
            assert not host, f"{name} imports {host}"


def test_run_options_hold_every_host_harness_option():
    """RunOptions is written out (readers and mypy see its fields): one field per host harness
    option, flags False by default and the rest None (the workload's own default)."""
    import dataclasses

    from dnnbench.runs.options import HOST_FIELDS, RunOptions
    from dnnbench.workloads.options import HOST_OPTIONS
    fields = {f.name: f for f in dataclasses.fields(RunOptions)}
    assert list(fields) == list(HOST_FIELDS) + [o.name for o in HOST_OPTIONS]
    for o in HOST_OPTIONS:
        assert fields[o.name].default is (False if o.kind is bool else None), o.name


def test_the_registries_are_what_the_cli_offers():
    """Each extension point is one table (README, Development), and the CLI's choices are read
    from it: a profiler, a report format, a kind of training, a harness option."""
    from dnnbench.cli import runs as cli_runs
    from dnnbench.profilers import PROFILERS
    from dnnbench.results.formats import FORMATS, format_of
    from dnnbench.runs.options import RunOptions
    from dnnbench.workloads import options, profile as launcher, train_tasks
    assert [p.value for p in cli_runs.Profiler] == list(PROFILERS)
    # the profilers that wrap the run have their container side, and only they
    assert set(launcher.TOOLS) == {name for name, p in PROFILERS.items() if p.wraps}
    assert all(p.vendor in (None, "nvidia", "amd") for p in PROFILERS.values())
    assert list(FORMATS) == ["table", "csv", "md", "json", "html", "openmetrics"] and all(format_of(f) is FORMATS[f] for f in FORMATS)
    assert set(train_tasks.TASKS) == {"vision", "recsys"}
    assert {o.name for o in options.HOST_OPTIONS} <= set(RunOptions.__dataclass_fields__)


def test_a_new_profiler_is_one_object_in_the_table(tmp_path):
    """What one new module would add (a Profiler), put in the table: the launch plan, the run
    folder's summary and `profile show` take it up with no other change."""
    from dnnbench import profilers
    from dnnbench.profilers.common import Profiler
    from dnnbench.runs import checks as launch
    shown = []

    def read(f):
        if (f.run_dir / "fake.txt").is_file():
            f.attempt("fakeprof", lambda: {"lines": len((f.run_dir / "fake.txt").read_text().splitlines())})
    fake = Profiler("fakeprof", vendor=None, window="torch", wraps=False, read=read,
                    show=lambda key, summary, top: shown.append((key, summary)))
    with profilers.PROFILERS.added(fake):
        assert launch.check_profile("fakeprof", None, None) == "fakeprof"
        assert launch.profiled(["python3", "-m", "w"], "fakeprof", "python3", "/r") == \
            ["python3", "-m", "w", "--profile-window", "torch"]
        (tmp_path / "fake.txt").write_text("a\nb\n")
        assert profilers.summarize(tmp_path) == {"fakeprof": {"lines": 2}}
        from dnnbench.results import profile_tables
        profile_tables._show(tmp_path, {"workload": "w", "status": "ok", "windows": []}, 5, False)
        assert shown == [("fakeprof", {"lines": 2})]
    assert "fakeprof" not in profilers.PROFILERS


# Calls that open, read or write a file by path without the file layer (workloads/fileio.py:
# no link followed, regular files only, no blocking, bounded reads, atomic writes).
_FILE_CALLS = {"read_text", "write_text", "read_bytes", "write_bytes", "copy", "copy2", "copyfile", "copytree"}
# Where going around it is right, and why: (module, a fragment of the line) -> reason
_AROUND_THE_FILE_LAYER = {
    ("workloads/fileio.py", ""): "the layer itself",
    ("workloads/system.py", 'open("/proc/cpuinfo")'): "a kernel file, not a user's",
    ("workloads/manifest.py", "open(path)"): "/sys cpufreq files, not a user's",
    ("toolkit/containers/engines/process.py", 'open(f"/proc/{pid}/'): "a kernel file, not a user's",
    ("toolkit/containers/engines/reaper.py", 'open(f"/proc/{pid}/'): "a kernel file, not a user's",
    ("toolkit/cli/__init__.py", "os.open(os.devnull"): "the null device: output a full disk refused is dropped",
    ("toolkit/locks.py", "os.O_DIRECTORY | os.O_NOFOLLOW"): "a folder's descriptor, no link followed",
    ("toolkit/containers/catalog.py", "item.read_text("): "the package's own images/*.yaml",
    ("toolkit/containers/build.py", "shutil.copy2(dnnbench.__file__"): "the package's code into a fresh temp folder",
    ("toolkit/containers/build.py", "shutil.copytree(Path(workloads.__file__)"): "the same",
}


def lines_where(path: Path, hit) -> list[tuple[int, str]]:
    """(line number, line) of every node of the module's syntax tree that `hit(node)` says yes to:
    the one walker the checks below share."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(node.lineno, lines[node.lineno - 1].strip()) for node in ast.walk(ast.parse("\n".join(lines)))
            if hit(node)]


def _functions(path: Path) -> list[tuple[str, int, int]]:
    """(`def NAME`, first line, last line) of every function of a module."""
    return [(f"def {n.name}", n.lineno, n.end_lineno or n.lineno) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _allowed(rel: str, lineno: int, line: str, functions, allowed: dict) -> bool:
    """Listed with its reason: by module (a prefix), and a fragment of the line or `def NAME`,
    the function it lies in."""
    return any(rel.startswith(mod) and (fragment in line if not fragment.startswith("def ") else any(
        name == fragment and first <= lineno <= last for name, first, last in functions))
        for mod, fragment, *_ in allowed)


def strays(paths, find, allowed: dict) -> list[str]:
    """`module:line: text` of what `find(path)` finds in the modules, less what `allowed` lists
    with its reason."""
    out = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        found = find(path)
        functions = _functions(path) if found else []
        out += [f"{rel}:{lineno}: {line}" for lineno, line in found
                if not _allowed(rel, lineno, line, functions, allowed)]
    return out


def _around_the_file_layer(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    bare_open = isinstance(f, ast.Name) and f.id in ("open", "fdopen") or (
        isinstance(f, ast.Attribute) and f.attr == "open" and isinstance(f.value, ast.Name)
        and f.value.id in ("os", "io", "codecs"))
    path_call = isinstance(f, ast.Attribute) and f.attr in _FILE_CALLS and not (
        isinstance(f.value, ast.Name) and f.value.id == "fileio")
    json_load = isinstance(f, ast.Attribute) and f.attr == "load" and isinstance(f.value, ast.Name) \
        and f.value.id == "json"
    return bare_open or path_call or json_load


def _calls_around_the_file_layer(path: Path) -> list[tuple[int, str]]:
    return lines_where(path, _around_the_file_layer)


def test_every_file_in_a_users_folder_goes_through_the_file_layer():
    """By construction, not by case: a new bare open() or Path.write_text() on the host or
    container side fails here unless it is listed above with its reason."""
    stray = strays(modules().values(), _calls_around_the_file_layer, _AROUND_THE_FILE_LAYER)
    assert not stray, "around workloads/fileio.py:\n" + "\n".join(stray)


def test_the_file_layer_check_finds_a_bare_open(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text('with open(p, "w") as fh:\n    fh.write(x)\nPath(p).write_text("")\nfileio.read_text(p)\n')
    assert sorted(n for n, _ in _calls_around_the_file_layer(planted)) == [1, 3]


# Readers that can run code from the bytes they read (a pickle's __reduce__). Checkpoints,
# results, plans and state files are data: workloads/checkpoint.py reads tensors and JSON only,
# so nothing here may unpickle, torch.load included (its weights_only mode had bypasses).
_UNPICKLERS = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
_CODE_FROM_DATA: dict[tuple[str, str], str] = {}   # (module, fragment of the line) -> reason; none so far


def _runs_code(node) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in _UNPICKLERS for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in _UNPICKLERS or (node.module or "").startswith(
            "torch") and any(alias.name == "load" for alias in node.names)
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    dotted = []
    while isinstance(f, ast.Attribute):
        dotted.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        dotted.append(f.id)
    dotted.reverse()
    return len(dotted) >= 2 and (dotted[0] in _UNPICKLERS or dotted[0] == "torch" and dotted[-1] in (
        "load", "loads") or dotted[-1] in ("Unpickler", "load_state") and dotted[0] != "self") \
        or any(k.arg == "allow_pickle" for k in node.keywords)


def _loaders_that_run_code(path: Path) -> list[tuple[int, str]]:
    return lines_where(path, _runs_code)


def test_nothing_read_back_can_run_code():
    """A results folder is often shared: no reader on the host or container side unpickles
    (pickle, dill, torch.load, numpy's allow_pickle), unless listed above with its reason."""
    stray = strays(modules().values(), _loaders_that_run_code, _CODE_FROM_DATA)
    assert not stray, "a reader that can run code from a file:\n" + "\n".join(stray)


def test_the_unpickler_check_finds_each_kind(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text("import pickle\nfrom dill import loads\nx = torch.load(p, weights_only=True)\n"
                       "y = torch.serialization.load(p)\nz = np.load(p, allow_pickle=True)\n"
                       "w = torch.jit.load(p)\nfrom torch.serialization import load\nfileio.read_json(p)\n"
                       "import json\nmodel.load_state_dict(sd)\n")
    assert sorted(n for n, _ in _loaders_that_run_code(planted)) == [1, 2, 3, 4, 5, 6, 7]


# The packages of the host side, lowest first: a module imports only its own package and those
# below it (the engines are part of containers; the container side imports nothing of ours).
# `dnnbench` itself (its __init__: the version, nothing imported) goes into images with workloads.
LAYERS = (("dnnbench.workloads", "dnnbench"),
          ("dnnbench.errors", "dnnbench.console", "dnnbench.names", "dnnbench.locks", "dnnbench.external",
           "dnnbench.yaml_files", "dnnbench.lists", "dnnbench.registry"),
          ("dnnbench.containers", "dnnbench.datasets"), ("dnnbench.profilers",),
          ("dnnbench.results", "dnnbench.exports"), ("dnnbench.history", "dnnbench.refs"),
          ("dnnbench.runs",), ("dnnbench.campaigns",), ("dnnbench.cli", "dnnbench.__main__", "dnnbench.reframe"))
# Imports that point up, each with its reason (a new one is a design question, not a line here).
_UPWARD = {("dnnbench.containers.doctor", "dnnbench.runs.gpus"):
           "`doctor` counts the GPUs as a run would see them (runs/gpus.py reads the same variables)"}


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest LAYERS entry it is or lies under."""
    found = [(len(entry), i) for i, layer in enumerate(LAYERS) for entry in layer
             if module == entry or (module.startswith(entry + ".") and entry != "dnnbench")]
    assert found, f"{module} is in no layer of LAYERS"
    return max(found)[1]


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets
                  if layer_of(b) > layer_of(a) and (a, b) not in _UPWARD)


def test_no_module_imports_a_package_above_its_own():
    """Not only no cycles: the package graph points one way (README, Development)."""
    edges = graph()
    assert {layer_of(m) for m in edges} == set(range(len(LAYERS)))    # every module placed, no layer empty
    assert upward(edges) == []


def test_the_layer_check_finds_an_upward_import():
    assert upward({"dnnbench.containers.engines.docker": {"dnnbench.runs.plan"},
                   "dnnbench.runs.plan": {"dnnbench.containers.engines.docker"}}) == \
        ["dnnbench.containers.engines.docker -> dnnbench.runs.plan"]
    assert upward({"dnnbench.workloads.harness": {"dnnbench.console"}}) == \
        ["dnnbench.workloads.harness -> dnnbench.console"]


def _runtime_names() -> set[str]:
    from dnnbench.containers.engines import ENGINES
    return {n for e in ENGINES.values() for n in e.names}


def runtime_comparisons(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """Where a module compares something with a runtime name (==, !=, in, not in a literal)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        for operand in [node.left, *node.comparators]:
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            words = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if words & names:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_runtime_name_is_compared_outside_the_engines():
    """An engine owns what differs between runtimes: everywhere else asks the engine object."""
    names = _runtime_names()
    engines = ROOT / "toolkit" / "containers" / "engines"
    found = {f"{path.relative_to(ROOT)}:{line}: {text}"
             for path in (ROOT / "toolkit").rglob("*.py") if engines not in path.parents
             for line, text in runtime_comparisons(path, names)}
    assert not found, "\n".join(sorted(found))


def test_the_runtime_check_finds_a_comparison(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('if plan.runtime == "docker":\n    pass\nok = x in ("singularity", "apptainer")\n'
                   'fine = plan.runtime == other\n')
    assert [line for line, _ in runtime_comparisons(bad, {"docker", "singularity", "apptainer"})] == [1, 3]


# A new engine, whole: this module text in toolkit/containers/engines/, and its line in ENGINES.
FAKE_ENGINE = '''
"""`--runtime fake` (or `pretend`): the workload run here, under `env` in place of an engine."""
import os
import shlex
import sys

from dnnbench.containers.engines.common import Engine, pinned


class Fake(Engine):
    name = "fake"
    aliases = ("pretend",)
    contained = False

    def available(self):
        return "1.0"

    def resolve(self, image, base, build):
        from dnnbench.containers.resolve import RunImage
        return RunImage(ref=None, base=None, python=sys.executable, accelerator="nvidia")

    planned = lambda self, image, base: self.resolve(image, base, False)   # noqa: E731

    def digest(self, ref):
        return {"ref": ref, "fake": True}

    def argv(self, plan):
        return ["env", "FAKE_ENGINE=1"] + [f"{k}={v}" for k, v in plan.env.items()] + pinned(plan, plan.argv)

    def job(self, plan, environ=None):
        from dnnbench.containers.engines.process import ProcessJob
        return ProcessJob(self.argv(plan), env=dict(os.environ if environ is None else environ),
                          cwd=plan.workdir), self.command_line(plan)

    def command_line(self, plan, exe=None):
        return shlex.join(self.argv(plan))


ENGINE = Fake()
'''
# What a new engine touches (README, Development: the `engine` row names these files).
ENGINE_FILES = ("toolkit/containers/engines/<engine>.py", "toolkit/containers/engines/__init__.py")


@pytest.fixture
def fake_engine(tmp_path, monkeypatch):
    """The fake engine's module, imported, and its one line in the table (for the test's length)."""
    import importlib

    from dnnbench.containers import engines
    (tmp_path / "fake_engine.py").write_text(FAKE_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = importlib.import_module("fake_engine")
    with engines.ENGINES.added(fake.ENGINE):
        yield fake.ENGINE


def test_a_new_engine_is_one_module_and_one_line_in_the_table(tmp_path, fake_engine):
    """The fake engine, in the table: the plan, the dry run's line, a real run with its result
    and manifest, and reproduce's runtime check take it up with no other change."""
    from dnnbench.containers import engines
    from dnnbench.runs import launch, plan as plan_mod
    from dnnbench.campaigns import reproduce
    from dnnbench.runs.options import RunOptions
    fake = fake_engine
    assert engines.lookup("pretend") is fake and "fake" in engines.choices() and "pretend" in engines.choices()
    assert "fake (pretend)" in engines.spoken()
    opts = dict(workload="resnet18", runtime="pretend", results=tmp_path / "results", batch_size=2, number=1,
                repeat=1, warmup=0)
    dry = launch.build_plan(RunOptions(**opts, dry_run=True, run_id="dry"))
    assert dry.runtime == "fake" and dry.image is None and dry.mounts == []
    assert plan_mod.command_line(dry).startswith("env FAKE_ENGINE=1 ")
    plan = launch.build_plan(RunOptions(**opts, run_id="real", quiet=True))
    assert plan.manifest["image"] is None     # no image, so no digest asked for
    data, code = launch.execute(plan, quiet=True)
    assert code == 0 and data["status"] == "ok", data.get("message")
    assert data["host"]["runtime"] == "fake"
    assert "env FAKE_ENGINE=1" in (tmp_path / "results" / "real" / "log.txt").read_text().splitlines()[0]
    again = reproduce.options_for(data, runtime=None, image=None, results=tmp_path / "again", run_id=None,
                                  data_dir=None, quiet=True)
    assert again.runtime == "fake" and again.image is None


def test_the_cli_offers_a_new_engine_from_the_table(tmp_path):
    """`dnnbench run --runtime fake --dry-run` once the module and its table line exist: the CLI's
    choices are read from ENGINES (here the line is added before the CLI is imported)."""
    import subprocess
    import sys
    (tmp_path / "fake_engine.py").write_text(FAKE_ENGINE)
    main = ("import fake_engine\nfrom dnnbench.containers import engines\n"
            "engines.register(fake_engine.ENGINE)\nfrom dnnbench.cli import main\nmain()\n")
    res = subprocess.run([sys.executable, "-c", main, "run", "resnet18", "--runtime", "fake", "--dry-run",
                          "--results", str(tmp_path / "results")], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert '"runtime": "fake"' in res.stdout and "env FAKE_ENGINE=1" in res.stdout
    res = subprocess.run([sys.executable, "-m", "dnnbench", "run", "resnet18", "--runtime", "fake", "--dry-run"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "fake" in res.stderr      # without its line, no such runtime


def test_every_engine_is_its_module_and_its_line():
    """The built-in engines are what ENGINE_FILES says a new one is: a module of the engines
    package defining ENGINE, listed in ENGINES; and the README's `engine` row names those files."""
    import sys

    from dnnbench.containers import engines
    from dnnbench.containers.engines.common import Engine
    init = (ROOT / "toolkit" / "containers" / "engines" / "__init__.py").read_text()
    for name, engine in engines.ENGINES.items():
        module = sys.modules[type(engine).__module__]
        assert isinstance(engine, Engine) and engine.name == name and module.ENGINE is engine
        path = Path(module.__file__)
        assert path.parent == ROOT / "toolkit" / "containers" / "engines", path
        assert f"{path.stem}.ENGINE" in init
    names = [n for e in engines.ENGINES.values() for n in e.names]
    assert len(names) == len(set(names)), "a name is two engines'"
    row = next(line for line in DEVELOPMENT.read_text().splitlines() if line.lstrip().startswith("| engine "))
    assert f"| {len(ENGINE_FILES)} |" in row
    assert "`toolkit/containers/engines/`" in row and "`ENGINES`" in row


# What a new job kind touches (README, Development: the `job kind` row names this file).
KIND_FILES = ("toolkit/runs/kinds.py",)


def plan_makers(path: Path) -> list[int]:
    """Where a module makes a RunPlan itself."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "RunPlan"]


def test_every_job_kind_is_one_object_in_the_table():
    """Each kind of job is a class of runs/kinds.py with its line in KINDS, answering what every
    placement asks of it; and the README's `job kind` row names that file."""
    import inspect

    from dnnbench.runs import kinds
    assert set(kinds.KINDS) == {"run", "train", "script"}
    for name, kind in kinds.KINDS.items():
        assert kind.name == name and inspect.getsourcefile(type(kind)) == str(ROOT / KIND_FILES[0])
        for part in ("check", "check_spread", "profile", "module_args", "job", "env", "mounts", "manifest", "made"):
            assert callable(getattr(kind, part)), (name, part)
        assert isinstance(kind.workdir, str) and kind.workdir.startswith("/")
        assert isinstance(kind.requeues, bool) and isinstance(kind.resumes, bool)
    row = next(line for line in DEVELOPMENT.read_text().splitlines()
               if line.lstrip().startswith("| job kind "))
    assert f"| {len(KIND_FILES)} |" in row and "`toolkit/runs/kinds.py`" in row and "`KINDS`" in row


def test_every_plan_is_made_in_one_place():
    """kinds.plan makes the plan of every kind in every placement (run, train, run --script, a
    suite's job, bisect's steps, reproduce, an sbatch job's steps)."""
    found = {str(path.relative_to(ROOT)) for path in (ROOT / "toolkit").rglob("*.py") if plan_makers(path)}
    assert found == {"toolkit/runs/kinds.py"}, found


def test_the_plan_maker_check_finds_a_plan(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("p = plan_mod.RunPlan(runtime='x')\nq = RunPlan()\nr = RunPlanner()\n")
    assert plan_makers(bad) == [1, 2]


# Where deciding by kind is right, and why. The kinds themselves, and the parsing that names a job's kind (a command's flags, a suite file's
# keys); everything that runs a job asks its kind object instead.
_KIND_DECIDERS = (   # (module, a fragment of the line or `def FUNCTION`, why)
    ("toolkit/runs/kinds.py", "", "the kinds themselves"),
    ("toolkit/cli/", "", "the commands' parsing: --script or a workload, --train"),
    ("toolkit/campaigns/suite_schema.py", "", "a suite file's parsing: a job's `train:` block"),
    ("toolkit/campaigns/suite.py", "def load", "a suite file's parsing: `script:`, `workload:` or `train:`"),
    ("toolkit/campaigns/suite.py", "def _options", "a suite job's keys as RunOptions takes them, as the CLI's"),
    ("toolkit/campaigns/suite.py", "def _script_options", "the same, a `script:` job's own keys"),
)
_KIND_SLOTS = {"script", "train", "training"}     # what names a job's kind when it is there or not


def _kind_words() -> set[str]:
    from dnnbench.runs import kinds
    return set(kinds.KINDS) | {"training", "workload"}


def _decides_by_kind(node, words: set[str]) -> bool:
    """`kind.name == "train"`, `kind_of(x) == "script"`, `opts.script is not None`, `train is
    None`, `spec.get("train") is not None`, `KINDS["train"]`: what picks what runs by kind."""
    def slot(e) -> bool:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get" and e.args:
            e = e.args[0]
            return isinstance(e, ast.Constant) and e.value in _KIND_SLOTS
        return isinstance(e, ast.Name) and e.id in _KIND_SLOTS or isinstance(e, ast.Attribute) and e.attr in _KIND_SLOTS
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "KINDS":
        return True
    if not isinstance(node, ast.Compare):
        return False
    operands = [node.left, *node.comparators]
    if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and any(slot(e) for e in operands) \
            and any(isinstance(e, ast.Constant) and e.value is None for e in operands):
        return True
    said = {e.value for e in operands if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    asked = " ".join(ast.unparse(e) for e in operands if not isinstance(e, ast.Constant))
    return bool(said & words) and ("kind" in asked or asked.endswith(".name"))


def kind_decisions(path: Path, words: set[str]) -> list[tuple[int, str]]:
    return lines_where(path, lambda node: _decides_by_kind(node, words))


def test_nothing_outside_the_kinds_decides_by_kind():
    """A placement (local, Slurm, suite, bisect, reproduce) asks the kind object what runs, what
    it checks and mounts, whether it requeues or resumes; a new `if train is not None` or
    `kind == "script"` fails here unless listed above with its reason."""
    words = _kind_words()
    stray = strays((ROOT / "toolkit").rglob("*.py"), lambda path: kind_decisions(path, words), _KIND_DECIDERS)
    assert not stray, "deciding by kind outside toolkit/runs/kinds.py:\n" + "\n".join(stray)


# Each way to decide by kind, and look-alikes that are not: (a line of code, found or not)
_KIND_LINES = [('if o.train is not None: pass', True), ('if opts.script is None: pass', True),
               ('if kind.name == "train": pass', True), ('if kind_of(data) == "script": pass', True),
               ('k = KINDS["train"]', True), ('if spec.get("train") is not None: pass', True),
               ('if kind.requeues: pass', False), ('if p.suffix == ".train": pass', False),
               ('if x is None: pass', False), ('if name == "train": pass', False)]


def test_the_kind_check_finds_each_way_to_decide(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text("".join(code + "\n" for code, _ in _KIND_LINES))
    assert sorted(n for n, _ in kind_decisions(planted, _kind_words())) == \
        [n for n, (_, found) in enumerate(_KIND_LINES, 1) if found]
    parsing = tmp_path / "p.py"
    parsing.write_text("def load(job):\n    return job.get('train') is not None\n\n\n"
                       "def run(job):\n    return job.get('train') is not None\n")
    allowed = [("p.py", "def load", "the parsing")]
    assert [n for n, line in kind_decisions(parsing, _kind_words())
            if not _allowed("p.py", n, line, _functions(parsing), allowed)] == [6]


def readme_additions() -> dict[str, str]:
    """The README's table of what each kind of addition touches (Development): the addition's
    name (its first cell, less a parenthesis) -> its row."""
    lines = DEVELOPMENT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "| addition | files | what |")
    rows = {}
    for line in lines[start + 2:]:
        if not line.lstrip().startswith("| "):
            break
        rows[line.split("|")[1].split(" (")[0].strip()] = line
    return rows


def _module_file(module: str) -> Path:
    parts = module.split(".")
    top = PACKAGES["dnnbench.workloads"] if parts[:2] == ["dnnbench", "workloads"] else PACKAGES["dnnbench"]
    rest = parts[2:] if top == PACKAGES["dnnbench.workloads"] else parts[1:]
    return top.joinpath(*rest).with_suffix(".py")


def _workloads_hold() -> None:
    from dnnbench.workloads import WORKLOADS
    for name, spec in WORKLOADS.items():
        path = ROOT / "workloads" / "models" / f"{spec.module}.py"
        assert f"class {spec.cls}(" in path.read_text(), (name, path)


def _host_options_hold() -> None:
    from dnnbench.cli.host_options import COMMANDS, OPTIONS
    from dnnbench.runs.options import HOST_FIELDS
    assert set(OPTIONS) <= set(HOST_FIELDS)
    assert all(set(rows) <= set(OPTIONS) for rows in COMMANDS.values())


def _formats_hold() -> None:
    from dnnbench.results.formats import FORMATS
    assert {_module_file(f.render.__module__).parent for f in FORMATS.values()} == {ROOT / "toolkit/results/formats"}


def _profilers_hold() -> None:
    from dnnbench.profilers import PROFILERS
    assert {_module_file(p.read.__module__).parent for p in PROFILERS.values()} == {ROOT / "toolkit/profilers"}


def _placements_hold() -> None:
    """The placements are the modules that wrap a kind's module_args in a launcher: the local
    one (kinds.build_plan), Slurm's and Kubernetes' manifests, the three the row names."""
    found = {path.relative_to(ROOT).as_posix() for path in (ROOT / "toolkit").rglob("*.py")
             if lines_where(path, lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                            and n.func.attr == "module_args")}
    assert found == {"toolkit/runs/kinds.py", "toolkit/runs/slurm.py", "toolkit/runs/kubernetes.py"}, found


def _training_kinds_hold() -> None:
    import inspect

    from dnnbench.workloads import train_tasks
    assert all(inspect.getsourcefile(task) == train_tasks.__file__ for task in train_tasks.TASKS.values())


def _schedulers_hold() -> None:
    """Every scheduler is a module of runs/schedulers with its line in SCHEDULERS, and no other
    module runs a scheduler's command (sbatch, squeue, scancel)."""
    from dnnbench.runs.schedulers import SCHEDULERS
    assert {_module_file(type(s).__module__).parent for s in SCHEDULERS.values()} == {ROOT / "toolkit/runs/schedulers"}
    commands = re.compile(r'"(sbatch|squeue|scancel)"')
    found = {path.relative_to(ROOT).as_posix() for path in (ROOT / "toolkit").rglob("*.py")
             if commands.search(path.read_text(encoding="utf-8"))}
    assert found <= {"toolkit/runs/schedulers/slurm.py"}, found


# Each addition the README names: the words its row must say, and what here holds the row true
# (engines and job kinds have tests of their own above).
ADDITIONS = {
    "workload": (("`workloads/models/`", "`WORKLOADS`"), _workloads_hold),
    "harness option": (("`workloads/options.py`", "`RunOptions`"), test_run_options_hold_every_host_harness_option),
    "host option": (("`toolkit/cli/host_options.py`", "`OPTIONS`", "`COMMANDS`"), _host_options_hold),
    "report format": (("`toolkit/results/formats/`", "`FORMATS`"), _formats_hold),
    "profiler": (("`toolkit/profilers/`", "`PROFILERS`"), _profilers_hold),
    "engine": (("`toolkit/containers/engines/`", "`ENGINES`"), test_every_engine_is_its_module_and_its_line),
    "job kind": (("`toolkit/runs/kinds.py`", "`KINDS`"), test_every_job_kind_is_one_object_in_the_table),
    "placement": (("`module_args`", "`kinds.plan`", "`toolkit/runs/slurm.py`", "`toolkit/runs/kubernetes.py`"),
                  _placements_hold),
    "kind of training": (("`workloads/train_tasks.py`", "`TASKS`"), _training_kinds_hold),
    "scheduler": (("`toolkit/runs/schedulers/`", "`SCHEDULERS`"), _schedulers_hold),
}


def test_the_readme_says_where_each_addition_goes_and_each_line_holds():
    """One README line per kind of addition (a workload, an option of either table, a report
    format, a profiler, an engine, a job kind, a placement), each naming files that exist and
    held true by the check beside it."""
    rows = readme_additions()
    assert set(rows) == set(ADDITIONS), set(rows) ^ set(ADDITIONS)
    for name, (words, holds) in ADDITIONS.items():
        for word in words:
            assert word in rows[name], (name, word)
        for path in re.findall(r"`((?:toolkit|workloads|tests)/[^`]*)`", rows[name]):
            assert (ROOT / path).exists(), (name, path)
        holds()


def _reaches_in(path: Path, mods: set[str], own: str) -> list[tuple[int, str]]:
    """Where a module uses another module's _private name: `mod._name`, or `from mod import _name`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if f"{node.module}.{a.name}" in mods:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and a.asname:
                    aliases[a.asname] = a.name
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and aliases[node.value.id] != own and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
        if isinstance(node, ast.ImportFrom) and node.module in mods and node.module != own:
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_reaches_into_another_modules_private_names():
    """Modules talk through public functions: a `_name` is its module's own (the floors hold only
    while nothing leans on another module's insides)."""
    mods = modules()
    stray = [f"{path.relative_to(ROOT)}:{line}: {what}" for name, path in mods.items()
             for line, what in _reaches_in(path, set(mods), name)]
    assert not stray, "\n".join(stray)


def test_the_private_name_check_finds_one(tmp_path):
    planted = tmp_path / "p.py"
    planted.write_text("from dnnbench.runs import bisect\nfrom dnnbench.runs.slurm import _written\n"
                       "bisect._template(1)\nbisect.template(2)\n")
    assert _reaches_in(planted, {"dnnbench.runs.bisect", "dnnbench.runs.slurm"}, "p") == \
        [(2, "from dnnbench.runs.slurm import _written"), (3, "dnnbench.runs.bisect._template")]


# Each test file is named after the package whose code it checks, tests/test_<package>_<module or
# topic>.py, so the tests of toolkit/X/Y.py are at tests/test_X_Y*.py (docs/guide/development.md).
# The packages: the host side's subpackages found on disk, `base` (its top-level modules: errors,
# console, registry ...), `workloads` (the container side) and `project` (checks of the whole tree).
def packages_of_tests(toolkit: Path = PACKAGES["dnnbench"]) -> set[str]:
    return {p.name for p in toolkit.iterdir() if (p / "__init__.py").is_file()} | {"base", "workloads", "project"}


def misnamed(names: list[str], packages: set[str]) -> list[str]:
    """The test file names that are not test_<package>_<word>[_<word>...].py."""
    rule = re.compile(rf"test_(?:{'|'.join(sorted(packages))})_[a-z0-9]+(?:_[a-z0-9]+)*\.py")
    return [name for name in names if not rule.fullmatch(name)]


def test_every_test_file_is_named_after_its_package():
    """A new module's tests are found without a search: by the file's name, as ReFrame and hpccm
    keep one test file per module. A new package's tests need no line here (read from the tree)."""
    packages = packages_of_tests()
    assert {"campaigns", "runs", "history"} <= packages and "migrations" not in packages
    names = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    assert not misnamed(names, packages), \
        f"not tests/test_<package>_<module or topic>.py, package one of {sorted(packages)}: {misnamed(names, packages)}"


def test_the_test_name_check_finds_a_bad_name(tmp_path):
    (tmp_path / "newpkg").mkdir()
    (tmp_path / "newpkg" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()                                  # a folder, no package
    (tmp_path / "errors.py").write_text("")
    packages = packages_of_tests(tmp_path)
    assert packages == {"newpkg", "base", "workloads", "project"}
    names = ["test_newpkg_thing.py", "test_base_errors.py", "test_workloads_harness_cpu.py", "test_project_x2.py",
             "test_slurm.py", "test_run_slurm.py", "test_data_x.py", "test_newpkg.py", "test_newpkg_.py",
             "test_newpkg__x.py", "test_Newpkg_x.py", "test_newpkg_x.txt"]
    assert misnamed(names, packages) == names[4:]


# Every test file the Markdown files name (tests/test_x.py, or test_x.py alone) exists, so a page
# never points at a renamed or removed file; a path in another tree (theirs/tests/test_x.py) is theirs.
_TEST_FILE = re.compile(r"(?<![\w/.-])(?:tests/)?(test_\w+\.py)")


def markdown_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"
                   and not (Path(folder) == ROOT and d in {"build", "dist", "results", "site"})]
        found += [Path(folder) / f for f in files if f.endswith(".md")]
    return sorted(found)


def missing_test_files(text: str, tests: Path) -> list[str]:
    return [m.group(0) for m in _TEST_FILE.finditer(text) if not (tests / m.group(1)).is_file()]


def test_every_test_file_the_docs_name_exists():
    pages = markdown_files()
    assert {ROOT / "README.md", ROOT / "BENCHMARKS.md", DEVELOPMENT} <= set(pages)
    stray = [f"{page.relative_to(ROOT)}: {name}" for page in pages
             for name in missing_test_files(page.read_text(encoding="utf-8"), ROOT / "tests")]
    assert not stray, "\n".join(stray)


def test_the_docs_check_finds_a_renamed_file(tmp_path):
    (tmp_path / "test_runs_slurm.py").write_text("")
    text = ("`tests/test_runs_slurm.py` (tests/test_slurm.py::test_x), test_slurm.py, test_runs_slurm.py;\n"
            "microsoft/superbenchmark: tests/benchmarks/test_theirs.py, theirs/tests/test_theirs.py")
    assert missing_test_files(text, tmp_path) == ["tests/test_slurm.py", "test_slurm.py"]
