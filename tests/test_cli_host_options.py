"""The host options are one table (dnnbench.cli.host_options): every row reaches every command
that takes it with the row's flags, short alias, default, help (or the command's own, where the
meaning differs) and check, and a bad value is refused with the same one line by each. The cases
are drawn from the table, so a new row or a new command is checked with no line added here."""
from __future__ import annotations

import pytest
import typer

from dnnbench.cli import app
from dnnbench.cli.host_options import COMMANDS, OPTIONS, SAME
from tests.helpers import cli_inprocess, dnnbench, one_line_error

# A value each checked row refuses (a row with a check and no value here fails the test below).
BAD = {"run_id": "../x", "env": "NOVALUE", "gpus": "0,,1", "nproc": "0", "timeout": "-1"}


def _commands() -> dict[str, object]:
    """Every command of the CLI by its path (`suite run`)."""
    found = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, path + [name])
        else:
            found[" ".join(path)] = cmd
    walk(typer.main.get_command(app), [])
    return found


def _param(command, name: str):
    return next(p for p in command.params if p.name == name)


CASES = [(path, name) for path, rows in COMMANDS.items() for name in rows]


@pytest.mark.parametrize("path, name", CASES, ids=[f"{p}:{n}" for p, n in CASES])
def test_each_command_takes_its_rows_as_the_table_says(path, name):
    row, own = OPTIONS[name], COMMANDS[path][name]
    param = _param(_commands()[path], name)
    assert tuple(param.opts + param.secondary_opts) == tuple(
        f for flag in row.flags for f in flag.split("/")), (path, name)
    assert param.help == (own.help or row.help)
    default = row.default if own.default is SAME else own.default
    if default is ...:
        assert param.required
    else:
        assert param.default == default or getattr(param.default, "value", None) == default


# Commands whose flag of the same name means something else, and what
OTHER_MEANING = {
    "render": "--base: the catalog base whose recipe is written",
    "build": "--base: the catalog base to build; --dry-run: the build's plan",
    "pull": "--base: the catalog base whose image is pulled",
    "history list": "--image, --base: filters of the results store",
}


def test_no_command_writes_a_host_option_itself():
    """A host option's flag comes from the table: every command carrying any row's flag is one
    COMMANDS lists, with exactly its rows in its order, unless the flag means something else there."""
    longs = {row.flags[0].split("/")[0]: name for name, row in OPTIONS.items()}
    carriers = {}
    for path, command in _commands().items():
        carried = [longs[p.opts[0]] for p in command.params if p.opts and p.opts[0] in longs]
        if carried:
            carriers[path] = carried
    assert {p: c for p, c in carriers.items() if p not in OTHER_MEANING} == \
        {p: list(rows) for p, rows in COMMANDS.items()}
    assert set(OTHER_MEANING) <= set(carriers)


def test_every_checked_row_has_a_bad_value_here():
    assert {name for name, row in OPTIONS.items() if row.check} == set(BAD)


def _refusal(path: str, flag: str, value: str) -> str:
    # the bad value first: it is parsed (and refused) before a missing argument is noticed
    code, out, err = cli_inprocess(*path.split(), flag, value, "x")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err + out, (path, flag, err)
    return lines[0].split(" (see `")[0]


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_refused_alike_by_every_command(name):
    """Drawn from the table: each command taking a checked row refuses its bad value as it is
    parsed, with the same line (the command's own check may refuse more, never differently)."""
    takers = [path for path, rows in COMMANDS.items() if name in rows and not rows[name].check]
    assert takers, name
    flag = OPTIONS[name].flags[0]
    said = {path: _refusal(path, flag, BAD[name]) for path in takers}
    assert len(set(said.values())) == 1, said
    for path, rows in COMMANDS.items():    # a command's own check refuses the same value too
        if name in rows and rows[name].check:
            assert _refusal(path, flag, BAD[name]) == next(iter(said.values())), path


def test_the_refusal_is_one_line_from_the_real_entry_point(tmp_path):
    one_line_error(dnnbench("slurm", "--run-id", "../x", "resnet18", "--results", tmp_path),
                   "--run-id '../x'")
    assert list(tmp_path.iterdir()) == []
