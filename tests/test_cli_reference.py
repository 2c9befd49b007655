"""The reference is written by the code: what is committed under docs/reference/ is what
`python -m dnnbench.cli.reference` writes now (every command, option and table), and the docs
site builds with MkDocs in strict mode (a broken link or a page left out fails it)."""
import subprocess
import sys

from tests.helpers import ROOT


def test_the_committed_reference_is_what_the_code_writes(tmp_path):
    from dnnbench.cli import reference
    written = reference.write(tmp_path)
    assert {p.name for p in written} == {p.name for p in (ROOT / "docs" / "reference").glob("*.md")}
    stale = [p.name for p in written if p.read_text() != (ROOT / "docs" / "reference" / p.name).read_text()]
    assert not stale, (f"docs/reference/{', '.join(stale)} differ from what the code writes: run "
                       "`python -m dnnbench.cli.reference docs/reference` and commit the result")


def test_every_command_and_table_entry_is_in_the_reference():
    import typer

    from dnnbench.cli import app, reference
    from dnnbench.containers.engines import ENGINES
    from dnnbench.runs.kinds import KINDS
    from dnnbench.workloads import WORKLOADS
    cli = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for path, cmd in reference._commands(typer.main.get_command(app), "dnnbench"):
        assert f"## `{path}`" in cli
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "hidden", False):
                assert f"`{p.opts[0]}`" in cli
    tables = (ROOT / "docs" / "reference" / "tables.md").read_text()
    for name in [*ENGINES, *KINDS, *WORKLOADS]:
        assert f"| `{name}` |" in tables
    for name in [*ENGINES, *KINDS]:            # each says what it is (its last cell)
        row = next(line for line in tables.splitlines() if line.startswith(f"| `{name}` |"))
        assert not row.endswith("|  |"), row


def test_the_docs_site_builds_strict(tmp_path):
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_the_writer_explains_itself_and_refuses_a_folder_it_cannot_make(tmp_path, monkeypatch, capsys):
    import pytest

    from dnnbench.cli import reference
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        reference.main(["--help"])
    assert done.value.code == 0 and "DIR" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []              # no folder named --help, no docs/ written here
    (tmp_path / "a-file").write_text("")
    assert reference.main([str(tmp_path / "a-file" / "ref")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write the reference into ") and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
