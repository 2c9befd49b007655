"""Which node a failed multi-node job lost, and which ranks ran there.

When a node dies mid-job, the survivors see only a closed connection ("Connection closed by
peer [10.0.0.12]" from gloo, a NCCL remote error) and Slurm, once the node has missed its
SlurmdTimeout, says "Node failure on node2" and marks it DOWN. Three witnesses, read after the
job has ended: the job's log, the nodes' state in Slurm, and the peer addresses in the errors,
mapped to node names through Slurm's NodeAddr. The ranks come from the placement the harness
recorded when the ranks met (`placement` in result.json).
"""
from __future__ import annotations

import re
from pathlib import Path

from dnnbench import external, names
from dnnbench.errors import DnnbenchError

SLURM_S = 30
_NODE_FAILURE = re.compile(r"Node failure on (\S+)")
_PEER = re.compile(r"(?:peer|remote=) ?\[?(\d+\.\d+\.\d+\.\d+)\]?")   # gloo: "closed by peer [A]", "remote=[A]"
_FIELD = re.compile(r"(\w+)=(\S*)")


def _scontrol(*args: str) -> str:
    try:
        res = external.call(["scontrol", *args], what="scontrol", timeout=SLURM_S)
    except DnnbenchError:
        return ""
    return res.stdout if res.returncode == 0 else ""


def job_fields(job: str) -> dict[str, str]:
    """The job's Slurm fields (NodeList, ExitCode...); empty when Slurm has none for it."""
    return dict(_FIELD.findall(_scontrol("show", "job", "-o", job)))


def nodes_of(job: str) -> dict[str, dict[str, str]]:
    """Each node of the job: its Slurm fields (NodeAddr, State, Reason...)."""
    fields = job_fields(job)
    names = _scontrol("show", "hostnames", fields["NodeList"]).split() if fields.get("NodeList") else []
    nodes = {}
    for name in names:
        text = _scontrol("show", "node", "-o", name)
        nodes[name] = dict(_FIELD.findall(text.split(" Reason=")[0]))
        if " Reason=" in text:   # the reason has spaces: up to its [user@time] stamp
            nodes[name]["Reason"] = text.split(" Reason=", 1)[1].split(" [", 1)[0].strip()
    return nodes


def diagnose(job: str, log_text: str, data: dict) -> list[dict]:
    """The lost nodes, each {"node", "ranks", "evidence"}; empty when none is known lost."""
    nodes = nodes_of(job)
    by_addr = {fields.get("NodeAddr"): name for name, fields in nodes.items()}
    evidence: dict[str, list[str]] = {}
    for name in _NODE_FAILURE.findall(log_text):
        evidence.setdefault(name, []).append("Slurm: node failure")
    for name, fields in nodes.items():
        state = fields.get("State", "")
        if "DOWN" in state or "NOT_RESPONDING" in state or state.endswith("*"):
            reason = fields.get("Reason")
            evidence.setdefault(name, []).append(f"Slurm: {state.lower()}" + (f" ({reason})" if reason else ""))
    message = str(data.get("message") or "")
    for addr in _PEER.findall(message + "\n" + log_text):
        name = by_addr.get(addr)
        if name:
            note = f"a rank lost its connection to {addr}"
            if note not in evidence.setdefault(name, []):
                evidence[name].append(note)
    placement = data.get("placement")
    if not isinstance(placement, list):
        placement = []
    lost = []
    for name in sorted(evidence):
        ranks = sorted(p["rank"] for p in placement
                       if isinstance(p, dict) and isinstance(p.get("rank"), int) and names.short_host(p.get("host")) == names.short_host(name))
        lost.append({"node": name, "ranks": ranks, "evidence": evidence[name]})
    # A closed connection alone is what every survivor sees when any peer fails: it names a
    # node lost only with Slurm's word, or when it is the only witness there is.
    confirmed = [n for n in lost if any(e.startswith("Slurm:") for e in n["evidence"])]
    return confirmed or lost


def amend(job: str, log_path: Path, data: dict) -> None:
    """Mark a failed multi-node result with the node(s) lost; a no-op for any other result."""
    if data.get("status") not in ("error", "running"):
        return
    from dnnbench.workloads import fileio
    try:
        log_text = fileio.read_text(str(log_path), max_bytes=4 << 20, errors="replace")
    except (OSError, ValueError):
        log_text = ""
    lost = diagnose(job, log_text, data)
    if not lost:
        return
    data["lost_nodes"] = lost
    data["status"] = "error"
    names = ", ".join(n["node"] + (" (rank%s %s)" % ("s" if len(n["ranks"]) > 1 else "",
                                                      ", ".join(map(str, n["ranks"]))) if n["ranks"] else "")
                      for n in lost)
    first = lost[0]["evidence"][0]
    data["message"] = f"lost node {names}: {first}" + (f"; {data['message']}" if data.get("message") else "")
