"""Which interface gloo binds to (workloads/netif.py), against this machine's own interfaces as
`ip` lists them."""
from __future__ import annotations

import subprocess

from dnnbench.workloads import netif


def _addresses():
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    pairs = [(line.split()[1], line.split()[3].split("/")[0]) for line in out.splitlines()]
    return [(name, addr) for name, addr in pairs if not addr.startswith("127.")]


def test_the_interface_holding_the_nodes_address():
    found = _addresses()
    assert found, "no interface with a non-loopback IPv4 address"
    for name, addr in found:
        assert netif.gloo_interface({"DNNBENCH_NODE_ADDR": addr}) == name


def test_the_interface_toward_the_rendezvous_host():
    name, addr = _addresses()[0]
    # the route toward an address on that interface's subnet leaves by it (the address itself: local)
    assert netif.gloo_interface({"MASTER_ADDR": addr}) == name


def test_left_alone_where_nothing_better_is_known():
    assert netif.gloo_interface({}) is None
    assert netif.gloo_interface({"MASTER_ADDR": "localhost"}) is None             # one node
    assert netif.gloo_interface({"MASTER_ADDR": "127.0.1.1"}) is None
    assert netif.gloo_interface({"DNNBENCH_NODE_ADDR": "127.0.0.1"}) is None
    assert netif.gloo_interface({"MASTER_ADDR": "no-such-host.invalid"}) is None
    env = {"GLOO_SOCKET_IFNAME": "ib0", "DNNBENCH_NODE_ADDR": _addresses()[0][1]}
    assert netif.gloo_interface(env) is None and netif.pin_gloo_interface(env) is None
    assert env["GLOO_SOCKET_IFNAME"] == "ib0"                                   # the user's choice wins
    env = {"DNNBENCH_NODE_ADDR": _addresses()[0][1]}
    assert netif.pin_gloo_interface(env) == env["GLOO_SOCKET_IFNAME"] == _addresses()[0][0]
