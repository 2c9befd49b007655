"""The one file layer: every file dnnbench reads or writes in a user's folders goes through here.

Rules, the same for every caller (host and container; Python 3.7+, stdlib only):
- no link is followed at the last component (O_NOFOLLOW): a link planted as `log.txt` or
  `.reserve` is refused, never written through;
- only regular files are read or written, checked with fstat on the open descriptor; opening
  never blocks (O_NONBLOCK), so a FIFO or a device named like our file cannot hang a command;
- reads are bounded (`max_bytes`): /dev/zero or a huge file is refused, not swallowed;
- whole-file writes are atomic (a temporary file in the same folder, fsync, rename), so a
  reader never sees half a file and a link at the target is replaced, not followed;
- an output is never written onto an input (`refuse_overwrite_of`);
- a tree is removed only after its top is checked to be a real folder under its root, and
  without following any link inside it.

Errors are OSError subclasses (also ValueError, for older callers that caught those), so
`exc.strerror` names the problem in words.
"""
import errno
import json
import math
import os
import shutil
import stat
import tempfile

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

DEFAULT_MAX = 16 * 2**20   # a file a user hands over (CA bundle, YAML, JSON state): KiBs to MiBs


class NotRegularFile(OSError, ValueError):
    """The path is a link, FIFO, device, socket or folder where a regular file belongs."""

    def __init__(self, path, kind, wanted="a regular file"):
        OSError.__init__(self, errno.EINVAL, "is %s, not %s" % (kind, wanted), os.fspath(path))
        self.kind = kind


class FileTooLarge(OSError, ValueError):
    def __init__(self, size, path="", limit=0):
        OSError.__init__(self, errno.EFBIG, "%d bytes, more than the %d this file may hold" % (size, limit),
                         os.fspath(path) if path else None)
        self.size = size


def kind_of(mode):
    """A file type in words, for error lines."""
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def kind_at(path):
    """What is at path, in words (no link followed): "missing", "a FIFO", "a regular file"..."""
    try:
        return kind_of(os.lstat(path).st_mode)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return exc.strerror or "unreadable"


def open_input(path):
    """A binary file object on something the user handed over to be read (a tar, a CA bundle):
    a link to a regular file is followed (inputs often live behind links), but whatever is at
    the end must be a regular file, and a FIFO or device is refused without blocking."""
    path = os.fspath(path)
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    return os.fdopen(_regular_blocking(fd, path), "rb")


def _open(path, flags, mode=0o644):
    """os.open without following a last-component link, without blocking, regular files only.
    The descriptor comes back in blocking mode."""
    path = os.fspath(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile(path, "a symbolic link")
        if exc.errno == errno.ENXIO:            # a FIFO with no reader, opened for writing
            raise NotRegularFile(path, "a FIFO")
        if exc.errno == errno.EISDIR:
            raise NotRegularFile(path, "a folder")
        raise
    return _regular_blocking(fd, path)


def _regular_blocking(fd, path):
    """`fd`, opened without blocking, checked to be a regular file and put back in blocking mode;
    closed (and NotRegularFile raised) when it is anything else."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, kind_of(st.st_mode))
        if _NONBLOCK:
            import fcntl
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_fd(path, flags=os.O_RDONLY, mode=0o644):
    """A descriptor on a regular file (see the rules above); for locks and O_EXCL creation."""
    return _open(path, flags, mode)


def read_bytes(path, max_bytes=DEFAULT_MAX):
    """The bytes of a regular file of at most `max_bytes`."""
    fd = _open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise FileTooLarge(size, path, max_bytes)
        chunks, total = [], 0
        while True:      # st_size can lie (procfs, a file still growing): bound the read itself
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise FileTooLarge(total, path, max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path, max_bytes=DEFAULT_MAX, encoding="utf-8", errors="strict"):
    return read_bytes(path, max_bytes).decode(encoding, errors)


def read_json(path, max_bytes=DEFAULT_MAX):
    """Parsed JSON of a regular file; ValueError (json's) when it is not JSON."""
    return json.loads(read_bytes(path, max_bytes).decode("utf-8"))


def clean_json(value):
    """JSON has no NaN/Inf: write them as strings so the file stays valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return value


def dumps_json(data, indent=1):
    """Strict JSON text (no NaN/Infinity tokens) ending in a newline."""
    return json.dumps(clean_json(data), indent=indent, sort_keys=True, allow_nan=False) + "\n"


def _check_target(path):
    """Refuse to replace anything but a regular file or nothing (a folder, FIFO or device
    named like our output is the user's, not ours). A link is replaced, never followed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise NotRegularFile(path, kind_of(st.st_mode))


def write_atomic_bytes(path, data, mode=0o644, durable=True):
    """Write `data` whole or not at all: a temp file beside `path`, fsync, rename over it.
    durable=False skips the fsync (bulk files that are cheap to make again: fake datasets)."""
    write_atomic_with(path, lambda fh: fh.write(data), mode, durable)


def write_atomic_with(path, fill, mode=0o644, durable=True, prefix=".tmp-"):
    """write_atomic_bytes for a writer: `fill(fh)` writes into the temp file's binary file
    object (a checkpoint streams there, with no copy of it in memory). `prefix` names the
    temp file, so its writer can find and remove what a killed write left."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    _check_target(path)
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic_text(path, text, mode=0o644):
    write_atomic_bytes(path, text.encode("utf-8"), mode)


def write_json(path, data, mode=0o644):
    """Atomic strict JSON (NaN/Inf written as strings)."""
    write_atomic_bytes(path, dumps_json(data).encode("utf-8"), mode)


def open_append(path, encoding="utf-8"):
    """A text file opened for appending (created if missing), line-buffered; never through a
    link, never a FIFO or device."""
    fd = _open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return os.fdopen(fd, "a", encoding=encoding, errors="replace", buffering=1)


def open_write(path, binary=False, encoding="utf-8"):
    """A regular file truncated for writing (created if missing), never through a link; for
    streams too long to hold in memory. Prefer the atomic writers for whole files."""
    fd = _open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.ftruncate(fd, 0)
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding)


def is_regular(path):
    """True for a regular file that is not a link (lstat: nothing is opened, nothing blocks)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_real_dir(path):
    """True for a folder that is not a link."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def make_dirs(path, root=None, mode=0o755):
    """mkdir -p that refuses to pass through a link or a non-folder at any existing component
    from `root` down (one planted link would redirect everything written below it). Above
    `root` (the folder the user named) links are the system's and are followed."""
    path = os.path.abspath(os.fspath(path))
    root = os.path.abspath(os.fspath(root)) if root is not None else path
    parts, head = [], path
    while True:
        try:
            st = os.lstat(head)
        except FileNotFoundError:
            parts.append(head)
            up = os.path.dirname(head)
            if up == head:
                break
            head = up
            continue
        below_root = head.startswith(root.rstrip(os.sep) + os.sep)   # the root itself may be a link
        if not stat.S_ISDIR(st.st_mode) and (below_root or not os.path.isdir(head)):
            raise NotRegularFile(head, kind_of(st.st_mode), "a folder")
        if head == root or not below_root:
            break
        head = os.path.dirname(head)
    for folder in reversed(parts):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not is_real_dir(folder):
                raise NotRegularFile(folder, kind_of(os.lstat(folder).st_mode), "a folder")
    return path


def same_file(a, b):
    """True when a and b name the same existing file (same device and inode, links followed)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def refuse_overwrite_of(output, inputs):
    """OSError when writing `output` would replace one of `inputs` (the same file, or the same
    path once links and `..` are resolved)."""
    out_real = os.path.realpath(os.fspath(output))
    for src in inputs:
        if same_file(output, src) or out_real == os.path.realpath(os.fspath(src)):
            raise OSError(errno.EEXIST, "would overwrite an input (%s)" % os.fspath(src), os.fspath(output))


def remove_tree(path, root):
    """Remove the folder `path`, which must be a real folder (not a link) strictly under `root`;
    rmtree does not follow links inside it (its fd-based walk on Linux)."""
    path, root = os.path.abspath(os.fspath(path)), os.path.realpath(os.fspath(root))
    real = os.path.realpath(path)
    if not is_real_dir(path):
        raise NotRegularFile(path, kind_of(os.lstat(path).st_mode) if os.path.lexists(path) else "missing",
                             "a folder dnnbench may remove")
    if real == root or not real.startswith(root.rstrip(os.sep) + os.sep):
        raise OSError(errno.EPERM, "is not inside %s: refusing to remove it" % root, path)
    shutil.rmtree(path)


def remove_file(path):
    """Remove a file or a link (never what a link points to); no error when it is missing.
    A folder is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        raise NotRegularFile(path, "a folder")
    os.unlink(path)
    return True
