"""A throwaway PostgreSQL 15 cluster for the history tests: Debian's server binaries, a data
folder in /tmp, a Unix socket only (no TCP port), password authentication. initdb refuses to
run as root, so the cluster belongs to the `postgres` user."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
USER, PASSWORD, DB = "postgres", "s3cret-pw", "postgres"


class Cluster:
    def __init__(self) -> None:
        if not (BIN / "initdb").exists():
            raise RuntimeError("PostgreSQL 15 is not installed: run `bash scripts/dev-setup.sh` "
                               "(it installs Debian's postgresql)")
        self.root = Path(tempfile.mkdtemp(prefix="dnnbench-pg-"))
        self.data, self.socket = self.root / "data", self.root / "socket"
        self.socket.mkdir()
        (self.root / "pw").write_text(PASSWORD + "\n")
        owner = pwd.getpwnam(USER)
        for p in (self.root, self.socket, self.root / "pw"):
            os.chown(p, owner.pw_uid, owner.pw_gid)
        self._as_owner(BIN / "initdb", "-D", self.data, "-U", USER, "--pwfile", self.root / "pw",
                       "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8")
        self.start()

    def _as_owner(self, *argv) -> None:
        cmd = [str(a) for a in argv]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", USER, "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        self._as_owner(BIN / "pg_ctl", "-D", self.data, "-l", self.root / "log", "-w", "start", "-o",
                       f"-k {self.socket} -c listen_addresses=''")

    def stop(self) -> None:
        self._as_owner(BIN / "pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")

    def url(self, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@/{DB}?host={self.socket}"

    def close(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass   # already stopped
        shutil.rmtree(self.root, ignore_errors=True)
