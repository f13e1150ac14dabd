"""The C allocator told to keep the memory a capture frees, for the next file's events.

A capture builds a file's worth of events (10,000 by default: their row images, their JSON lines,
the file's text, tens of MB), writes them and frees them, then builds the next file's. glibc's
malloc gives freed memory back to the system once 128 KiB are free at its heap's top, and serves
each block of 128 KiB or more (a file's text) with a mapping of its own, unmapped when freed: every
file's memory was faulted in again, page by page. On the 2-core virtual machine of BENCHMARKS.md
("Capture") a page fault costs about 3.5 µs, and the MariaDB capture took 265,000 of them for
200,000 changes, a quarter to a third of its CPU time; with this, 40,000 (most of the rest are
Python's own arenas, which it unmaps when they empty, beyond the reach of this setting).
"""

from __future__ import annotations

import ctypes
import platform

# mallopt's options (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_MIB = 1 << 20

# Free memory kept at the heap's top (a file's worth of events and more); what each growth of the
# heap adds besides; the size from which a block gets a mapping of its own (above a file's text).
KEPT = {_M_TRIM_THRESHOLD: 64 * _MIB, _M_TOP_PAD: 16 * _MIB, _M_MMAP_THRESHOLD: 16 * _MIB}


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep up to 64 MiB of freed memory; False where the C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(mallopt(option, value) == 1 for option, value in KEPT.items())
