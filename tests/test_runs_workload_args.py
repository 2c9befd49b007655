"""Options after `--` are checked on the host, by the container's own parser, before any
container starts: a typo is one `error:` line naming the nearest option, and leaves no run
folder and no `error` result for `report` to find."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from dnnbench.workloads import WORKLOADS, harness, load
from tests.helpers import cli_inprocess, dnnbench, one_line_error


def _own_options(name: str, parser_for) -> list[str]:
    """The options a workload adds to its parser itself (add_args), beyond the harness table."""
    mine = {s for a in parser_for(load(name))._actions for s in a.option_strings}
    return sorted(o for o in mine if o.startswith("--") and o not in
                  {s for a in harness.parser_for(load("loader"))._actions for s in a.option_strings})


OWN = [(w, o) for w in WORKLOADS for o in _own_options(w, harness.parser_for)]


def test_workloads_have_options_of_their_own_to_check():
    assert len(OWN) >= 5, OWN      # otherwise the tests below would check only the harness table


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(OWN), st.integers(min_value=3, max_value=40))
def test_a_typo_in_a_workloads_own_option_is_refused_with_the_option_it_meant(case, at):
    workload, option = case
    k = 2 + at % (len(option) - 2)
    typo = option[:k] + option[k] * 2 + option[k + 1:]    # a doubled letter: never an argparse prefix
    code, out, err = cli_inprocess("run", workload, "--dry-run", "--", typo, "1")
    assert code == 2 and err.count("error:") == 1, err
    assert f"did you mean {option}?" in err and "Traceback" not in err


@pytest.mark.parametrize("words, fragment", [
    (["--batchsize", "2"], "did you mean --batch-size?"),
    (["--image-size", "big"], "invalid int value"),
    (["stray"], "takes no argument 'stray'"),
])
def test_harness_options_and_values_after_the_dashes(words, fragment):
    code, out, err = cli_inprocess("run", "ssd300", "--dry-run", "--", *words)
    assert code == 2 and fragment in err, err


def test_a_typo_starts_nothing_and_leaves_no_result(tmp_path):
    res = dnnbench("run", "resnet18", "--results", tmp_path, "--run-id", "typo", "--", "--channel-last")
    one_line_error(res, "--channel-last", "did you mean --channels-last?")
    assert not (tmp_path / "typo").exists()


def test_train_reads_them_with_the_training_entrys_parser(tmp_path):
    """`train` passes a model's own options (ncf's --factors) and refuses a typo of them; a
    benchmark-only option (--number) is not the training entry's."""
    code, out, err = cli_inprocess("train", "ncf", "--data", tmp_path, "--dry-run", "--", "--factros", "8")
    assert code == 2 and "did you mean --factors?" in err, err
    code, out, err = cli_inprocess("train", "ncf", "--data", tmp_path, "--dry-run", "--", "--number", "3")
    assert code == 2 and "--number" in err, err
