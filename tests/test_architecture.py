"""The host side's shape: no import cycles between its modules (function-level imports
included: a cycle through a lazy import is still a cycle), and the container side never
imports the host side."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
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
