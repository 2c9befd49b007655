"""The discovery part of a Kubernetes API server, on loopback, for `kubectl create --dry-run=client`.

No cluster can run on these machines (no kubelet, k3s or kind in Debian 12 or PyPI), yet kubectl
maps each document's apiVersion and kind to a resource through the server's discovery documents
before a client-side dry run. This answers those (/api, /apis and each group version) and
nothing else: kubectl then parses, maps and prints every object as it would before sending it.
Schema validation is kubernetes-validate's and the CRD schemas' (tests/test_runs_kubernetes.py)."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# group/version: (resource, kind) served; what dnnbench k8s writes
GROUPS = {"v1": [("services", "Service"), ("configmaps", "ConfigMap")],
          "batch/v1": [("jobs", "Job")],
          "jobset.x-k8s.io/v1alpha2": [("jobsets", "JobSet")],
          "trainer.kubeflow.org/v1alpha1": [("trainjobs", "TrainJob")]}


def _resources(version: str) -> dict:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": version,
            "resources": [{"name": name, "singularName": kind.lower(), "namespaced": True, "kind": kind,
                           "verbs": ["create", "get", "list", "delete"]} for name, kind in GROUPS[version]]}


def _answer(path: str) -> dict | None:
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
    if path == "/apis":
        groups = [gv for gv in GROUPS if "/" in gv]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": gv.split("/")[0], "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
             "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]}} for gv in groups]}
    if path == "/api/v1":
        return _resources("v1")
    if path.startswith("/apis/") and path[len("/apis/"):] in GROUPS:
        return _resources(path[len("/apis/"):])
    return None


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):   # noqa: N802 (http.server's name)
        body = _answer(self.path.split("?")[0])
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextmanager
def discovery():
    """The server's URL while it runs (a free loopback port)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
