"""dnnbench.history.peers: the word `history peers` gives one result against its peers."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.history import peers


@pytest.mark.parametrize("value, others, said", [
    (100.0, [99.0, 101.0, 100.5, 98.0], "too few peers to say"),        # under MIN_PEERS
    (100.0, [99.0, 101.0, 100.5, 98.0, 100.0], "normal"),
    (80.0, [99.0, 101.0, 100.5, 98.0, 100.0], "slower"),
    (130.0, [99.0, 101.0, 100.5, 98.0, 100.0], "faster"),
    (97.0, [100.0] * 8, "normal"),        # a tight series: within the default tolerance is normal
    (60.0, [100.0, 100.0, 100.0, 100.0, 100.0, 20.0], "slower"),   # one odd peer does not widen the spread
])
def test_the_word(value, others, said):
    assert peers.word(value, others)["word"] == said


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1, 1e4), min_size=peers.MIN_PEERS, max_size=30), st.floats(1, 1e4))
def test_the_word_agrees_with_the_band_it_states(others, value):
    said = peers.word(value, others)
    assert said["low"] <= said["high"]
    expected = "slower" if value < said["low"] else "faster" if value > said["high"] else "normal"
    assert said["word"] == expected
    assert peers.word(sorted(others)[len(others) // 2], others)["word"] == "normal"   # the median is normal
