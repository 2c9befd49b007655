"""Keep freed CPU buffers mapped in the training process (glibc malloc).

glibc serves every allocation above its mmap threshold (at most 32 MiB) with a fresh mmap and
hands it back to the kernel on free, so a CPU training step that makes activations of 50 MiB
and more faults every page of them in again, each step: resnet18 at batch 16 on real data took
6.0 million minor faults in 55 steps with glibc's defaults and 0.59 million with these
settings, and ran 7-12 % faster; peak memory +19 % (the heap keeps what the largest step
needed). No mmap for allocations and no trimming keep the memory in the heap for reuse, as the
jemalloc/tcmalloc preload of Intel's PyTorch launcher does. The DataLoader workers, forked after
this, inherit it. CUDA memory has its own caching allocator; this only touches host memory.
"""
import ctypes
import os

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4


def glibc():
    """'glibc 2.36', or None where the C library is not glibc (musl, macOS)."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    return version if version and version.startswith("glibc") else None


def keep_mapped(enabled=True):
    """Apply the settings; returns what the result records about the allocator (a line)."""
    libc = glibc()
    if libc is None:
        return "not glibc: the C library's defaults"
    if not enabled:
        return "%s malloc defaults (--malloc-defaults)" % libc
    try:
        mallopt = ctypes.CDLL(None).mallopt
        ok = mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, -1) == 1
    except (OSError, AttributeError):
        ok = False
    if not ok:
        return "%s malloc defaults (mallopt refused)" % libc
    return "%s malloc: no mmap, no trim (freed buffers stay mapped)" % libc
