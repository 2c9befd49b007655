"""Figures to a Prometheus Pushgateway (`--push URL`). The push comes after the command's own
work is done and written: a gateway that is down, slow or refuses the push costs one warning
line and exit code 3 where the command would have exited 0 (PUSH_FAILED), never the result or
the report."""
from __future__ import annotations

import re

from dnnbench.errors import DnnbenchError

PUSH_S = 10.0          # a gateway slower than this counts as down: the command does not hang on it
PUSH_FAILED = 3        # the exit code of a command whose own work succeeded but whose push did not
# a password in the URL is refused, and never echoed in the refusal (a CI log keeps it)
_USERINFO = re.compile(r"://[^/?#]*@")
_URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?")


def check_url(url: str | None) -> str | None:
    """A Pushgateway URL as --push takes it (http or https, a host, an optional port and path),
    checked before anything runs."""
    if url is not None and not _URL.fullmatch(url):
        shown, hidden = _USERINFO.subn("://***@", url)
        raise DnnbenchError(f"--push {shown!r}: give the Pushgateway's URL, e.g. http://pushgateway:9091"
                            + (" (no user or password in it: they would be shown in logs)" if hidden else ""))
    return url


def push(url: str, families: list, group: str) -> bool:
    """Replace the group `job=<group>` on the gateway with these families (a PUT, as
    prometheus-client's push_to_gateway does); False, said in one line, when that fails."""
    from prometheus_client import push_to_gateway

    from dnnbench.console import info, warn

    from .openmetrics import registry
    try:
        push_to_gateway(url, job=group, registry=registry(families), timeout=PUSH_S)
    except Exception as exc:    # urllib's errors, a timeout, an HTTP error status: all one line
        why = getattr(exc, "reason", None) or exc
        warn(f"push to {url} failed: {why}; nothing else is lost (exit {PUSH_FAILED})")
        return False
    info(f"pushed {sum(1 for f in families if f.samples)} metric families to {url} (job={group})")
    return True


def exit_code(code: int, pushed: bool) -> int:
    """The command's exit code after a push: its own, or PUSH_FAILED where that was 0."""
    return PUSH_FAILED if code == 0 and not pushed else code
