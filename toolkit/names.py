"""Names that become paths or image references: run ids, suite and job names, image tags.

One character set for every path component a user or a file can choose, checked with
fullmatch (re's `$` also matches before a trailing newline), and one check that a path
built from such names stays under the folder it belongs in.
"""
from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path

from dnnbench.errors import DnnbenchError

MAX_COMPONENT = 100
# starts with a letter or digit, so "." and ".." and "-x" (an option to some tool) cannot be one
COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}" % (MAX_COMPONENT - 1))
RULE = f"letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_COMPONENT}"


def is_component(text) -> bool:
    return isinstance(text, str) and COMPONENT.fullmatch(text) is not None


def path_component(text, what: str) -> str:
    """`text` when it is safe as one path component; else a DnnbenchError naming `what`."""
    if not is_component(text):
        raise DnnbenchError(f"{what} {text!r}: use {RULE}")
    return text


def slug(text: str) -> str:
    """A path component made from any text (for names dnnbench derives, never for user names)."""
    cut = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-.") or "x"
    return cut[:MAX_COMPONENT] if cut[0].isalnum() else ("x" + cut)[:MAX_COMPONENT]


def short_host(host) -> str:
    """A host's short name: `node2.cluster` and `node2` are one node (Slurm names one way, a
    hostname may be the other)."""
    return str(host).split(".")[0]


def new_run_id(workload: str, suffix: str | None = None) -> str:
    """time-workload-random (or time-workload-suffix): sorts by time, unique enough per second."""
    return path_component(f"{time.strftime('%Y%m%d-%H%M%S')}-{workload}-{suffix or secrets.token_hex(2)}", "run id")


NAME_MAX = 255   # bytes in one path component (Linux)


def user_path(path, what: str = "path") -> Path:
    """A path the user gave, with ~ expanded, or one error line: an unknown ~user, a NUL, a
    component longer than the filesystem allows."""
    text = str(path)
    if "\0" in text:
        raise DnnbenchError(f"{what} {text!r} holds a NUL character")
    try:     # a name of bytes that are not UTF-8 could not be written to a log, a result or a table
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise DnnbenchError(f"{what} {text.encode('utf-8', 'surrogateescape')!r}: the name is not UTF-8 "
                            f"text; rename it (results and logs record it as text)") from None
    for part in text.split("/"):
        if len(os.fsencode(part)) > NAME_MAX:
            raise DnnbenchError(f"{what}: the name {part[:40]!r}... is {len(os.fsencode(part))} bytes long; "
                                f"a file name holds at most {NAME_MAX}")
    try:
        return Path(text).expanduser()
    except RuntimeError:      # ~nosuchuser, or no home folder at all
        raise DnnbenchError(f"{what} {text!r}: cannot expand {text.split('/')[0]!r} (no such user's home)") from None


def real(path) -> Path:
    """A path with links and `..` resolved, never raising: a link loop stays as it is (and is
    then refused where it is opened), where Path.resolve() raises RuntimeError on Python 3.11."""
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def inside(root: Path, path: Path, what: str = "path") -> Path:
    """`path` resolved, after checking that it lies under `root` (both resolved, so links and
    `..` count as what they point at); a DnnbenchError otherwise."""
    base = real(user_path(root, what))
    full = real(user_path(path, what))
    if full == base or base not in full.parents:
        raise DnnbenchError(f"{what} {full} is not inside {base}: refusing to write or remove it")
    return full


# The distribution reference grammar (what `docker tag` accepts): lower-case path components
# joined by separators, an optional registry host[:port] first; the tag after the last ':'.
_REPO_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_REGISTRY = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                       r"(?::[0-9]+)?")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def image_ref(ref: str, what: str = "--image") -> str:
    """`ref` when it is a valid image reference to run: repository[:tag][@digest]."""
    name, at, digest = ref.partition("@") if isinstance(ref, str) else ("", "", "")
    if at and not _DIGEST.fullmatch(digest):
        raise DnnbenchError(f"{what} {ref!r} is not a valid image reference (name[:tag][@sha256:...])")
    return image_tag(name, what) and ref


_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}")


def image_tag(ref: str, what: str = "image tag") -> str:
    """`ref` when it is a valid repository[:tag] to build into; else a DnnbenchError."""
    from docker.auth import split_repo_name
    from docker.utils import parse_repository_tag

    bad = DnnbenchError(f"{what} {ref!r} is not a valid image tag (lower-case name[:tag], e.g. dnnbench:cpu)")
    if not isinstance(ref, str) or not ref or len(ref) > 255 or "@" in ref or "://" in ref:
        raise bad
    repo, tag = parse_repository_tag(ref)
    if tag is not None and not _TAG.fullmatch(tag):
        raise bad
    registry, path = split_repo_name(repo)
    if repo != path and not _REGISTRY.fullmatch(registry):
        raise bad
    if not all(_REPO_COMPONENT.fullmatch(part) for part in path.split("/")):
        raise bad
    return ref
