"""The word `history peers` gives one result against its peers (the store's results of the same
job on the same GPU model): normal, slower or faster against the peers' spread, or too few peers
to say. The spread is robust (the median absolute deviation, scaled to a standard deviation, so
one odd peer does not widen it), never narrower than the default --tolerance of the median (a
tight series does not call a 1 % wobble slower)."""
from __future__ import annotations

import statistics

from dnnbench.results import rounds

MIN_PEERS = 5      # fewer peers than this: their spread is not known well enough to judge
WIDTH = 3.0        # how many spreads either side of the median are still normal
MAD_TO_SD = 1.4826


def spread(peers: list[float]) -> float:
    """The peers' spread: their scaled MAD, at least the default tolerance of their median."""
    from dnnbench.workloads.options import BY_NAME
    median = statistics.median(peers)
    mad = statistics.median(abs(v - median) for v in peers) * MAD_TO_SD
    return max(mad, abs(median) * float(BY_NAME["tolerance"].default))


def word(value: float, peers: list[float]) -> dict:
    """{"word": normal | slower | faster | too few peers to say, "low", "high"}: the band around
    the peers' median that is normal (None with too few peers)."""
    if len(peers) < MIN_PEERS:
        return {"word": "too few peers to say", "low": None, "high": None}
    median, width = statistics.median(peers), WIDTH * spread(peers)
    low, high = median - width, median + width
    said = rounds.against_band(value, low, high)
    return {"word": said, "low": low, "high": high}


def left_out(count: int) -> str | None:
    """The line naming the results a history command left out because their host was busy."""
    if not count:
        return None
    return (f"left out: {count} result(s) whose host was busy (every core taken, the run starved); "
            "--include-busy counts them")
