"""The one result a container-side run writes, whatever the kind of job (a workload benchmark,
a training run, a user's script): opened when the run starts, filled as it goes, closed once
(the status an exception means, the verdict, the reproducibility manifest, the end time) and
written atomically through the file layer. A dict, so the code that fills it reads as before.

Python 3.7+, stdlib only (the manifest imports torch where present).
"""
import os
import sys
import traceback
import uuid
from datetime import datetime

from . import manifest as manifest_mod, schema, verdict, windows
from .errors import UsageError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NAN, EXIT_OOM, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


class Terminated(BaseException):
    """SIGTERM, raised where the run is (the harness's handler): ends the run as interrupted."""


def now():
    return datetime.utcnow().isoformat() + "Z"


def new_run_id():
    return datetime.utcnow().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def _peer_lost(exc):
    """A collective that failed because a peer went away (gloo's closed connection, NCCL's
    DistBackendError), as opposed to a failure of this rank's own."""
    text = str(exc)
    return type(exc).__name__ in ("DistBackendError", "DistNetworkError") or \
        "Connection closed by peer" in text or "Connection reset by peer" in text


class Result(dict):
    """One run's result.json. `args` (with .data, .seed, .results) is what the manifest reads."""

    def __init__(self, run_id, workload, unit, world_size=1, synthetic=None, args=None, **extra):
        dict.__init__(self, {
            "schema_version": schema.SCHEMA_VERSION, "run_id": run_id or new_run_id(), "workload": workload,
            "status": "running", "message": None, "options": {}, "unit": unit + "/s",
            "throughput": schema.empty_throughput(), "windows": [], "loss": [], "system": {},
            "started": now(), "ended": None, "world_size": world_size, "ranks": [], "synthetic": synthetic,
            "data_wait_fraction": None, "telemetry": None, "loader": None, "verdict": None,
        })
        self.update(extra)
        self.args = args

    def collect_manifest(self, device, rank=0, **more):
        """The reproducibility manifest (once the device and the system facts are known)."""
        self["manifest"] = dict(manifest_mod.collect(self.args, device, self.get("system"), rank), **more)
        return self["manifest"]

    def failed(self, exc, interrupted="interrupted by a signal", interrupted_log="interrupted: partial result kept"):
        """The status and message an exception ends the run with, said on stderr; the exit code."""
        if isinstance(exc, UsageError):
            self.update(status="error", message=str(exc))
            _log("error: %s" % exc)
            return EXIT_USAGE
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            self.update(status="interrupted", message=interrupted)
            _log(interrupted_log)
            return EXIT_INTERRUPTED
        oom = "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError"
        self.update(status="oom" if oom else "error", message="%s: %s" % (type(exc).__name__, str(exc).strip()[:2000]))
        if _peer_lost(exc):   # another rank's story (a lost node, a killed rank), not a bug here
            _log("error: a collective failed: another rank stopped answering (%s: %s)"
                 % (type(exc).__name__, (str(exc).strip().splitlines() or [""])[0][:300]))
        else:
            traceback.print_exc()
        return EXIT_OOM if oom else EXIT_ERROR

    def close(self, results, rank=0, write=True):
        """End time, throughput and data wait from the windows, the verdict and the manifest;
        written by rank 0. False when the file could not be written (said on stderr)."""
        self["ended"] = now()
        self["throughput"] = schema.throughput(self["windows"], self["world_size"])
        self["data_wait_fraction"] = windows.data_wait_fraction(self["windows"])
        try:
            self["verdict"] = verdict.judge(self)
        except Exception as exc:  # noqa: BLE001 - a verdict never costs the result
            self["verdict"] = {"label": "unknown", "evidence": ["no verdict: %s" % exc], "hint": None}
        if "manifest" not in self and self.args is not None:   # ended before the device was known
            try:
                self.collect_manifest(self["options"].get("device"), rank)
            except Exception as exc:  # noqa: BLE001 - facts are a bonus, never the run's failure
                _log("warning: no manifest: %s" % exc)
        if rank != 0 or not write:
            return True
        out = os.path.join(results, schema.RESULT_FILE)
        try:
            schema.write_atomic(out, self)
        except OSError as exc:
            _log("error: cannot write the result to %s: %s" % (out, exc))
            return False
        training = self.get("training") if isinstance(self.get("training"), dict) else {}
        missed = training.get("target") is not None and not training.get("reached")
        # `ok` says the run ended well, not that it trained to its target: said beside it
        _log("result: %s (%s%s)" % (out, self["status"], ", target not reached" if missed else ""))
        return True
