"""Which network interface gloo uses between nodes.

Gloo binds to the address the machine's hostname resolves to, and Debian's /etc/hosts maps a
host's own name to 127.0.1.1: the ranks then tell each other a loopback address and the job
ends in "connectFullMesh failed ... remote=[127.0.1.1]". GLOO_SOCKET_IFNAME fixes it but takes one
literal name, and nodes may differ. So each process names its own interface: the one holding
the node's address (DNNBENCH_NODE_ADDR, which `dnnbench slurm` sets from Slurm's NodeAddr), else
the one its packets to the rendezvous host (MASTER_ADDR) leave by. A name the user set wins.
"""
import fcntl
import os
import socket
import struct

_SIOCGIFADDR = 0x8915


def _ipv4(host):
    try:
        return socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
    except (socket.gaierror, UnicodeError, IndexError, ValueError):
        return None


def _source_address(dest):
    """The local address packets to `dest` leave from (a UDP connect sends nothing)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((dest, 9))
        return s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()


def _interface_of(address):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue            # an interface without an IPv4 address
            if socket.inet_ntoa(raw[20:24]) == address:
                return name
    finally:
        s.close()
    return None


def gloo_interface(env):
    """The interface gloo should bind to, or None to leave gloo's own choice (one node, a name
    the user set, or nothing better known)."""
    if env.get("GLOO_SOCKET_IFNAME"):
        return None
    address = _ipv4(env["DNNBENCH_NODE_ADDR"]) if env.get("DNNBENCH_NODE_ADDR") else None
    if address is None and env.get("MASTER_ADDR"):
        master = _ipv4(env["MASTER_ADDR"])
        if master is None or master.startswith("127."):
            return None             # one node, or the head seen from itself: nothing to learn
        address = _source_address(master)
    if address is None or address.startswith("127."):
        return None
    return _interface_of(address)


def pin_gloo_interface(env=None):
    """Set GLOO_SOCKET_IFNAME for this process before init_process_group; returns the name."""
    env = os.environ if env is None else env
    name = gloo_interface(env)
    if name:
        env["GLOO_SOCKET_IFNAME"] = name
    return name
