"""No verdict bypasses the one rule (results/rounds.py), read from the source: a verdict word
(faster, slower, same, good, bad, pass, fail, inconclusive) is made only there, an interval's
bounds are ordered against a number only there, and every command that ends in a verdict calls
one of its rules. Other modules may read a verdict (compare it, key a dict of words by it),
never make one; a new command that judged its own interval would fail here."""
from __future__ import annotations

import ast
import pytest

from tests.helpers import ROOT

RULE = "toolkit/results/rounds.py"
WORDS = {"faster", "slower", "same", "good", "bad", "pass", "fail", "inconclusive"}
BOUNDS = {"low", "high", "ci95_low", "ci95_high", "ci95_low_pct", "ci95_high_pct"}
RULES = {"judge", "side", "apart", "apart_gate", "target", "single_sided"}

# (file, word or "bounds"): why it is not a verdict between measurements
EXEMPT = {
    ("toolkit/results/mlperf.py", "pass"): "MLPerf's compliance checker: rules of a log, not a figure",
    ("toolkit/results/mlperf.py", "fail"): "MLPerf's compliance checker: rules of a log, not a figure",
    ("toolkit/results/formats/cells.py", "pass"): "a cell shows a True/False the rule decided (baseline.judge)",
    ("toolkit/results/rcp.py", "slower"): "MLPerf's RCP rule: where a run's epochs stand, mlperf-logging's checker",
}

# every command that ends in a verdict, and the function where it asks the rule
PRODUCERS = [
    ("toolkit/results/report.py", "compare_command"),           # compare A B
    ("toolkit/results/baseline.py", "judge"),                   # report --baseline
    ("toolkit/campaigns/reproduce.py", "reproduce_command"),         # reproduce
    ("toolkit/campaigns/bisect.py", "compare_images_command"),       # compare-images
    ("toolkit/campaigns/bisect.py", "_stage"),                       # bisect: the ends, a midpoint
    ("toolkit/campaigns/bisect.py", "search"),                       # bisect: the last good against the first slower
    ("toolkit/results/fleet.py", "judged"),                     # the fleet check, report's slow hosts
]


def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text(), str(p)))
            for p in sorted((ROOT / "toolkit").rglob("*.py"))]


def _parents(tree: ast.AST) -> dict:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _reads(node: ast.Constant, parents: dict) -> bool:
    """The word is read, not made: a dict key, a comparand (`== "slower"`, `in ("pass", ...)`)."""
    up = parents.get(node)
    if isinstance(up, ast.Dict) and any(k is node for k in up.keys):
        return True
    if isinstance(up, (ast.Tuple, ast.List, ast.Set)):
        node, up = up, parents.get(up)
    return isinstance(up, ast.Compare)


def made_words(path: str, tree: ast.Module) -> list[str]:
    parents = _parents(tree)
    return [f"{path}:{n.lineno}: makes {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in WORDS and not _reads(n, parents)
            and (path, n.value) not in EXEMPT]


def _bound(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id in BOUNDS:
        return True
    if isinstance(node, ast.Attribute) and node.attr in BOUNDS:
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in BOUNDS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value in BOUNDS
    return False


def ordered_bounds(path: str, tree: ast.Module) -> list[str]:
    """An interval's bound ordered against anything (<, >, <=, >=): deciding from an interval."""
    if (path, "bounds") in EXEMPT:
        return []
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare) and any(isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in n.ops) \
                and any(_bound(x) for x in [n.left, *n.comparators]):
            found.append(f"{path}:{n.lineno}: {ast.unparse(n)}")
    return found


def test_only_the_rule_makes_a_verdict_word():
    made = [line for path, tree in _sources() if path != RULE for line in made_words(path, tree)]
    assert not made, "a verdict made outside results/rounds.py:\n" + "\n".join(made)


def test_only_the_rule_decides_from_an_interval():
    found = [line for path, tree in _sources() if path != RULE for line in ordered_bounds(path, tree)]
    assert not found, "an interval judged outside results/rounds.py:\n" + "\n".join(found)


@pytest.mark.parametrize("path, function", PRODUCERS)
def test_every_verdict_command_asks_the_rule(path, function):
    tree = ast.parse((ROOT / path).read_text())
    (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    asked = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name) and n.func.value.id in ("rounds", "rounds_mod")}
    assert asked & RULES, f"{path}: {function} gives a verdict without results/rounds.py's rules"


def test_the_checks_catch_what_they_look_for():
    """The old ways, as main had them, are caught: a verdict word returned, an interval judged."""
    old = ast.parse('def compare_verdict(r, tolerance):\n'
                    '    if r["low"] > 1 + tolerance:\n        return "faster"\n'
                    '    return {"same": 1}.get(r["verdict"]) if r["verdict"] in ("same",) else "inconclusive"\n'
                    'def baseline(h, floor):\n    return "fail" if h.get("ci95_high") < floor else None\n')
    assert [m.split(": ", 1)[1] for m in made_words("x.py", old)] == \
        ["makes 'faster'", "makes 'inconclusive'", "makes 'fail'"]
    assert len(ordered_bounds("x.py", old)) == 2
    # the rule itself makes them (the check is not vacuous)
    rule = ast.parse((ROOT / RULE).read_text())
    assert made_words(RULE, rule) and ordered_bounds(RULE, rule)


def test_the_exemptions_are_still_needed():
    """An exemption whose file no longer makes the word is dropped, so the list stays true."""
    sources = dict(_sources())
    for (path, word), why in EXEMPT.items():
        tree = sources[path]
        if word == "bounds":
            assert ordered_bounds(path + "-", tree), (path, why)    # another name: not exempt
        else:
            parents = _parents(tree)
            assert any(isinstance(n, ast.Constant) and n.value == word and not _reads(n, parents)
                       for n in ast.walk(tree)), (path, word, why)

