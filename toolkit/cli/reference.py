"""The reference, written by the code: every command and option from the CLI itself (typer's
click tree), and the tables the code already keeps (engines, job kinds, schedulers, profilers,
report formats, workloads, harness and host options, the result schema) as Markdown pages under
docs/reference/. `python -m dnnbench.cli.reference DIR` writes them; the tests check that what
is committed is what this writes, and MkDocs builds the site from them (strict)."""
from __future__ import annotations

import sys
from pathlib import Path


def _cell(text) -> str:
    """One Markdown table cell: a help text's wrapped lines joined, then escaped as every
    markdown cell is (results.formats.cells.md_cell)."""
    from dnnbench.results.formats.cells import md_cell
    return md_cell(" ".join(str(text if text is not None else "").split()))


def _what(entry) -> str:
    """An extension's description: its class's docstring, else its module's (an engine module
    defines one class and says what it is at its top), first paragraph."""
    doc = type(entry).__doc__ or sys.modules[type(entry).__module__].__doc__ or ""
    return doc.strip().split("\n\n")[0]


def _table(head: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _default(param) -> str:
    d = param.default
    if callable(d) or d is None or d == () or d == [] or getattr(param, "is_flag", False) and d is False:
        return ""
    return f"`{d}`"


def _commands(group, prefix: str):
    """(path, command) for every command under the group, depth first, sorted by name."""
    for name in sorted(group.commands):
        cmd = group.commands[name]
        if getattr(cmd, "hidden", False):
            continue
        path = f"{prefix} {name}"
        if hasattr(cmd, "commands"):
            yield path, cmd
            yield from _commands(cmd, path)
        else:
            yield path, cmd


def cli_page() -> str:
    import typer

    from dnnbench.cli import app
    root = typer.main.get_command(app)
    out = ["# Command reference\n",
           "Written by `python -m dnnbench.cli.reference` from the command line itself: each command's "
           "`--help`, as tables. Exit codes and what each command prints are in its help text.\n"]
    for path, cmd in _commands(root, "dnnbench"):
        out.append(f"## `{path}`\n")
        if cmd.help:
            out.append(cmd.help.strip().replace("\b\n", "") + "\n")
        if hasattr(cmd, "commands"):
            subs = [[f"`{path} {n}`", (c.short_help or (c.help or "").split("\n\n")[0])]
                    for n, c in sorted(cmd.commands.items()) if not getattr(c, "hidden", False)]
            out.append(_table(["command", "what it does"], subs))
            continue
        args = [p for p in cmd.params if p.param_type_name == "argument"]
        if args:
            out.append(_table(["argument", "meaning"], [[f"`{(a.name or '').upper()}`", a.help] for a in args]))
        opts = [p for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)]
        if opts:
            out.append(_table(["option", "default", "meaning"],
                              [[", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts)), _default(p), p.help]
                               for p in opts]))
    return "\n".join(out)


def tables_page() -> str:
    from dnnbench.cli.host_options import OPTIONS
    from dnnbench.containers.engines import ENGINES
    from dnnbench.profilers import PROFILERS
    from dnnbench.results.formats import FORMATS
    from dnnbench.runs.kinds import KINDS
    from dnnbench.runs.schedulers import SCHEDULERS
    from dnnbench.workloads import WORKLOADS
    from dnnbench.workloads.options import HARNESS_OPTIONS
    out = ["# Tables\n", "The extension points and option tables, written from the code "
           "(`python -m dnnbench.cli.reference`). Adding an entry to one of these tables is how "
           "dnnbench grows; each table refuses a name or alias taken twice.\n"]
    out += ["## Engines (`--runtime`)\n", _table(
        ["engine", "aliases", "runs in an image", "Slurm steps", "what it is"],
        [[f"`{e.name}`", ", ".join(e.aliases), "yes" if e.contained else "no", "yes" if e.slurm else "no",
          _what(e)] for e in ENGINES.values()])]
    out += ["## Job kinds\n", _table(
        ["kind", "requeued by a scheduler", "resumes", "what it is"],
        [[f"`{k.name}`", "yes" if k.requeues else "no", "yes" if k.resumes else "no",
          _what(k)] for k in KINDS.values()])]
    out += ["## Schedulers\n", _table(
        ["scheduler", "job script", "submits with"],
        [[f"`{s.name}`", f"`{s.script}`", f"`{s.submit_command}`"] for s in SCHEDULERS.values()])]
    out += ["## Profilers (`--profile`)\n", _table(
        ["profiler", "vendor", "timed window"],
        [[f"`{p.name}`", p.vendor or "any", p.window] for p in PROFILERS.values()])]
    out += ["## Report formats (`report --format`)\n", _table(
        ["format"], [[f"`{f.name}`"] for f in FORMATS.values()])]
    out += ["## Workloads\n", _table(
        ["workload", "data", "unit", "parameters (M)", "follows"],
        [[f"`{n}`", s.data_kind or "synthetic", s.unit, f"{s.params_m:.1f}", s.reference]
         for n, s in WORKLOADS.items()])]
    out += ["## Harness options (`run`, suites, the container's argv)\n", _table(
        ["option", "default", "meaning"],
        [[f"`--{o.name.replace('_', '-')}`", "" if o.default is None else f"`{o.default}`", o.short]
         for o in HARNESS_OPTIONS if o.host])]
    out += ["## Host options (every command that runs a job)\n", _table(
        ["option", "default", "meaning"],
        [[", ".join(f"`{f}`" for f in o.flags), "" if o.default in (None, [], False) else f"`{o.default}`", o.help]
         for o in OPTIONS.values()])]
    return "\n".join(out)


def schema_page() -> str:
    from dnnbench.workloads import fileio, schema
    data = fileio.read_json(str(Path(schema.__file__).parent / "result.schema.json"))
    required = set(data.get("required") or [])
    rows = []
    for name, spec in sorted((data.get("properties") or {}).items()):
        kind = spec.get("type") or ("object" if "$ref" in spec else "")
        rows.append([f"`{name}`", "/".join(kind) if isinstance(kind, list) else kind,
                     "yes" if name in required else "", spec.get("description", "")])
    return ("# The result (`result.json`)\n\n" + _cell(data.get("description", "")) + "\n\n"
            f"Schema version {schema.SCHEMA_VERSION}; the JSON Schema is `workloads/result.schema.json`.\n\n"
            + _table(["field", "type", "required", "meaning"], rows))


def _summary(path: Path) -> str:
    """A module's docstring up to its first full stop (or its first paragraph)."""
    import ast

    from dnnbench.workloads import fileio
    doc = ast.get_docstring(ast.parse(fileio.read_text(str(path)))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    cut = first.find(". ")
    return first[:cut + 1] if cut > 0 else first


def modules_page() -> str:
    """Every module of both sides, by package, with what it is for (its docstring)."""
    import dnnbench
    import dnnbench.workloads as workloads
    sides = {"dnnbench": Path(dnnbench.__file__).parent, "dnnbench.workloads": Path(workloads.__file__).parent}
    out = ["# Modules\n", "Every module of the host side (`toolkit/`, the package `dnnbench`) and the container side "
           "(`workloads/`, `dnnbench.workloads`), with the first sentence of its docstring; written by "
           "`python -m dnnbench.cli.reference`. The packages and their floors: [development](../guide/development.md).\n"]
    for side, top in sides.items():
        rows = []
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(top)
            if "migrations" in rel.parts or (side == "dnnbench" and rel.parts[0] == "workloads"):
                continue
            name = ".".join((side, *rel.with_suffix("").parts)).removesuffix(".__init__")
            rows.append([f"`{name}`", _summary(path)])
        out += [f"## `{side}`\n", _table(["module", "what it is for"], rows)]
    return "\n".join(out)


PAGES = {"cli.md": cli_page, "tables.md": tables_page, "result.md": schema_page, "modules.md": modules_page}


def write(folder: Path) -> list[Path]:
    from dnnbench.workloads import fileio
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        path = folder / name
        fileio.write_atomic_text(str(path), page().rstrip("\n") + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m dnnbench.cli.reference [DIR]`: --help explains, a folder that cannot be made
    or written is one line and exit 2 (never a folder named after a mistyped option)."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m dnnbench.cli.reference",
                                     description="Write the reference pages (" + ", ".join(PAGES) + ") "
                                                 "into DIR, from the code itself.")
    parser.add_argument("dir", nargs="?", default="docs/reference", metavar="DIR",
                        help="the folder to write them into (default: docs/reference, from here)")
    folder = parser.parse_args(argv).dir
    if folder.startswith("-"):
        parser.error(f"unknown option {folder!r}")
    try:
        for p in write(Path(folder)):
            print(p)
    except OSError as exc:
        print(f"error: cannot write the reference into {folder}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
