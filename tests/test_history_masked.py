"""No store password is ever shown (toolkit/history/masked.py, location.py): URLs of every form
SQLAlchemy reads (and typos of them, libpq keyword strings, a password in the query string or
holding an @), each with a known password, typed into every command that takes --db (found in
the CLI itself) and DNNBENCH_DB, a run that records, and the suite/watch store check; every
output, every file written and the store itself grepped for the password. A real PostgreSQL
(tests/postgres.py) answers the forms that reach a server."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings, strategies as st

from tests.helpers import cli_inprocess
from tests.history_results import write
from tests.postgres import PASSWORD, Cluster

KNOWN = "Kn0wnPw-73x"          # the password typed into every form that must fail

# (name, template): {pw} the password, {sock} the cluster's socket folder, {tmp} a folder
FORMS = [
    ("postgresql", "postgresql://postgres:{pw}@/postgres?host={sock}"),
    ("postgres alias", "postgres://postgres:{pw}@/postgres?host={sock}"),
    ("psycopg", "postgresql+psycopg://postgres:{pw}@/postgres?host={sock}"),
    ("psycopg2", "postgresql+psycopg2://postgres:{pw}@/postgres?host={sock}"),
    ("postgres+psycopg2", "postgres+psycopg2://postgres:{pw}@/postgres?host={sock}"),
    ("password in the query", "postgresql:///postgres?host={sock}&user=postgres&password={pw}"),
    ("sslpassword in the query", "postgresql://postgres@/postgres?host={sock}&sslpassword={pw}"),
    ("password twice", "postgresql://postgres:{pw}@/postgres?host={sock}&password={pw}"),
    ("a port nobody listens on", "postgresql://postgres:{pw}@127.0.0.1:1/postgres"),
    ("typo postgresq", "postgresq://postgres:{pw}@localhost/postgres"),
    ("typo one slash", "postgresql:/postgres:{pw}@localhost/postgres"),
    ("typo no colon", "postgresql//postgres:{pw}@localhost/postgres"),
    ("mysql", "mysql://root:{pw}@localhost/db"),
    ("mysql+pymysql", "mysql+pymysql://root:{pw}@localhost:3306/db?charset=utf8"),
    ("mssql odbc_connect", "mssql+pyodbc:///?odbc_connect=DRIVER%3Dx%3BPWD%3D{pw}"),
    ("libpq keywords", "dbname=postgres user=postgres password={pw} host={sock}"),
    ("sqlite password parameter", "sqlite:///{tmp}/h.db?password={pw}"),
    ("sqlite URI key parameter", "sqlite:///file:{tmp}/h.db?mode=rwc&key={pw}&uri=true"),
    ("not a URL at all", "postgresql://postgres:{pw}@[::1/postgres"),
    ("a bad port", "postgresql://postgres:{pw}@localhost:port/postgres"),
]
# the password itself in the ways a user may type it (an @, a colon, a slash, percent-encoded)
PASSWORDS = [KNOWN, f"{KNOWN}@host2", f"{KNOWN}:{KNOWN}/x?y", quote(f"{KNOWN}@%/"), f"{KNOWN}#frag"]


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.close()


def _db_commands() -> list[list[str]]:
    """Every command that takes --db, read from the CLI itself: a new one is checked here too."""
    import typer.main

    from dnnbench.cli import app
    found = []

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        if any("--db" in getattr(p, "opts", ()) for p in cmd.params):
            found.append((path, [p.name for p in cmd.params if p.param_type_name == "argument"]))
    walk(typer.main.get_command(app), [])
    return found


def _argv(path: list[str], arguments: list[str], results: Path) -> list[str]:
    # an argument is a result or folder (import, peers) or a name (a job): the results folder
    # serves as both, so the command reaches its store
    return [*path, *(("resnet50-bs64",) if a == "job" else (str(results),) for a in arguments)]


def _grep(folder: Path, secret: str) -> list[str]:
    hits = []
    for p in folder.rglob("*"):
        if secret in str(p):
            hits.append(str(p))
        elif p.is_file() and not p.is_symlink() and secret.encode() in p.read_bytes():
            hits.append(str(p))
    return hits


def _secrets(password: str) -> list[str]:
    from urllib.parse import unquote
    return [s for s in {password, unquote(password), KNOWN} if s]


def test_every_command_that_takes_db_is_found():
    names = {" ".join(path) for path, _ in _db_commands()}
    assert {"history", "history list", "history import", "history series", "history peers",
            "history changes"} <= names


def test_no_form_of_url_shows_its_password_in_any_command(cluster, tmp_path):
    """Each form with one of the passwords in turn, given as --db and as DNNBENCH_DB in turn."""
    results = tmp_path / "results"
    write(results, 0, 1000)
    commands = _db_commands()
    from dnnbench.history.masked import printable
    turn = 0
    for i, (name, template) in enumerate(FORMS):
        password = PASSWORDS[i % len(PASSWORDS)]
        url = template.format(pw=password, sock=cluster.socket, tmp=tmp_path)
        for path, arguments in commands:
            turn += 1
            argv = _argv(path, arguments, results)
            args, env = ([*argv, "--db", url], {}) if turn % 2 else (argv, {"DNNBENCH_DB": url})
            code, out, err = cli_inprocess(*args, env=env)
            said = out + err
            for secret in _secrets(password):
                assert secret not in said, (name, args, said)
            assert "Traceback" not in said and code in (0, 1, 2), (name, code, said)
            if code == 2 and "history store" in said:
                assert printable(url).split("?")[0][:20] in said, (name, said)
    for password in PASSWORDS:
        for secret in _secrets(password):
            assert _grep(tmp_path, secret) == [], "a file holds the password"


def test_the_store_checks_of_a_suite_and_a_watch_never_show_it(cluster, tmp_path, monkeypatch):
    from dnnbench.errors import DnnbenchError
    from dnnbench.campaigns.watch import History
    from dnnbench.campaigns.suite_watch import check_store
    for name, template in FORMS:
        monkeypatch.setenv("DNNBENCH_DB", template.format(pw=KNOWN, sock=cluster.socket, tmp=tmp_path))
        for check in (check_store, lambda: History().close()):
            with pytest.raises(DnnbenchError) as caught:
                check()
            assert KNOWN not in str(caught.value) and str(caught.value).startswith("history store "), name


def test_a_result_recorded_with_a_password_and_nothing_written_holds_it(cluster, tmp_path, monkeypatch, capsys):
    """What finalize does at a run's end (record), with the real password (the server takes
    it), a wrong one and a typo (one warning line each); then a page of the history. The
    outputs, the folder and the store's every row are free of both passwords."""
    from sqlalchemy import create_engine, text

    from dnnbench.history.record import record
    from dnnbench.workloads import schema
    good = cluster.url()
    wrong = good.replace(PASSWORD, KNOWN)
    for i, url in enumerate((good, wrong, wrong.replace("postgresql", "postgresq"))):
        monkeypatch.setenv("DNNBENCH_DB", url)
        path = write(tmp_path / "runs", i, 1000)
        assert record(path, schema.read(str(path))) is (url == good)
    said = capsys.readouterr()
    assert said.err.count("history not updated") == 2, said.err
    page = tmp_path / "h.html"
    code, out, err = cli_inprocess("history", "--db", good, "-f", "html", "-o", page)
    assert code == 0 and page.exists(), err
    for secret in (PASSWORD, KNOWN):
        assert secret not in said.out + said.err + out + err
        assert _grep(tmp_path, secret) == []
    engine = create_engine(good.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        rows = [json.dumps([str(v) for v in r]) for r in conn.execute(text("SELECT * FROM results"))]
    engine.dispose()
    assert len(rows) == 1 and all(PASSWORD not in r and KNOWN not in r for r in rows)


@settings(max_examples=300, deadline=None)
@given(user=st.text("abcdefghij", max_size=8),
       password=st.text(st.characters(blacklist_categories=("Zs", "Cc", "Cs"), blacklist_characters="&;"),
                        min_size=1, max_size=30).map(lambda t: "Zq" + t),
       host=st.sampled_from(["db", "10.0.0.1:5432", "", "[::1]"]),
       scheme=st.sampled_from(["postgresql", "postgres+psycopg2", "postgresq", "mysql", "sqlite", "x"]),
       query=st.sampled_from(["", "?sslmode=require", "?password={pw}", "?application_name=a@b&token={pw}"]),
       typed=st.sampled_from(["as is", "percent-encoded"]))
def test_printable_masks_any_password(user, password, host, scheme, query, typed):
    from dnnbench.history.location import locate
    from dnnbench.history.masked import printable, scrub
    pw = quote(password, safe="") if typed == "percent-encoded" else password
    url = f"{scheme}://{user}:{pw}@{host}/db{query.format(pw=pw)}"
    shown = printable(url)
    assert pw not in shown and password not in shown
    text = scrub(f"driver said: cannot reach {url}; password={password}; it was {password!r}", url)
    assert pw not in text and password not in text
    try:
        loc = locate(url)
    except Exception as exc:   # noqa: BLE001 - a refusal: one line without the password
        assert type(exc).__name__ in ("DnnbenchError", "NoStore"), exc
        assert pw not in str(exc) and password not in str(exc)
    else:
        assert loc.shown == shown


def test_the_masking_of_known_forms():
    from dnnbench.history.masked import printable, scrub
    assert printable("postgresql://u:p@ss@host/db") == "postgresql://u:***@host/db"
    assert printable("postgresql:///db?host=/s&password=pw&user=u") == "postgresql:///db?host=/s&password=***&user=u"
    assert printable("dbname=x password='a b' host=z") == "dbname=x password=*** host=z"
    assert printable("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
    assert printable("/data/history.db") == "/data/history.db"
    assert printable("user@server:pw@host") == "user@server:***@host"
    # a driver's text about the URL a parser split at the first @: the rest is taken out too
    assert "ss" not in scrub("failed to resolve host 'ss@host'", "postgresql://u:pa@ss@host/db").replace("ss@", "")
