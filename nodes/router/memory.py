"""Keep a router's pages in memory (docs/router.md, "Files and memory").

The testbed's host reclaims file pages that look idle even with most of its memory free (the
kernel's DAMON thread ``kdamond`` runs there: ``fincore /usr/bin/python3.11`` loses pages minute
by minute during a sweep). A router that then runs code from such a page waits for the disk, and
with the disk stalled that wait is a late timer like any other (nodes/router/files.py). Locked
pages are unevictable, so ``lock_memory`` locks the router's mappings, now and later, as they are
faulted in (``MCL_ONFAULT``: the untouched parts of the interpreter's reservations, thread stacks
and arenas cost nothing).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MCL_CURRENT = 1
"""``mlockall`` flag (<sys/mman.h>, Linux): lock the pages mapped now."""
MCL_FUTURE = 2
"""``mlockall`` flag: lock the mappings made from now on."""
MCL_ONFAULT = 4
"""``mlockall`` flag (Linux 4.4): lock pages when they are faulted in, not all at once."""


def lock_memory(flags: int = MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) -> str | None:
    """``mlockall(flags)`` for the calling process; None on success, else the reason it failed.

    Locks are not inherited across ``fork``: call it in the router, not in the zygote.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError as exc:
        return f"no libc: {exc}"
    if libc.mlockall(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        return f"mlockall: {os.strerror(err)}"
    return None
