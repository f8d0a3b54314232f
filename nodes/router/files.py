"""The station's files, written off the event loop (docs/router.md, "Files and memory").

Every second a router replaces ``sta<N>.counters.json`` (a new file renamed over the old one) and
appends its trace records to ``sta<N>.trace.bin``. On the testbed's disk (ext4 without a journal,
mounted ``discard``) the rename frees the old file's block, and ext4 then issues the discard for
it synchronously inside ``rename(2)``: 0.3 ms on average over 3.5 million of them
(``/proc/diskstats``), but 200-500 ms when the host's disk stalls. Done in the event loop, that
stall is a late timer in every station that writes during it, and such runs were invalid
("router loop lag max 513 ms > 200 ms", docs/results/notes/yu2004.md). Here the writes go to one
thread per router: ``rename`` and ``write`` release the GIL, so the loop keeps serving while the
writer waits for the disk.

``FileWriter`` keeps the order of the writes it is given, and for a file it replaces keeps only
the newest content not yet written (a writer stalled for a second does not write one second's
counters twice). ``close`` writes what is pending and joins the thread; after ``close`` (and in a
writer never started) every call writes at once in the caller's thread, which is what the router's
exit path wants.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from dataclasses import dataclass

_log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 10.0
"""How long ``close`` waits for pending writes before it gives up on the thread (it is a daemon
thread, so the process can still exit)."""


@dataclass(frozen=True)
class _Write:
    path: str
    data: bytes
    append: bool


def write_file(path: str, data: bytes, append: bool) -> None:
    """Append ``data`` to ``path``, or replace ``path`` with it atomically (temporary file and
    ``os.replace`` in the same directory, so a reader never sees half a file)."""
    if append:
        with open(path, "ab") as f:
            f.write(data)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class FileWriter:
    """One background thread that appends to and replaces files, in order; see the module doc."""

    def __init__(self, name: str = "files") -> None:
        self._name = name
        self._cv = threading.Condition()
        self._queue: deque[_Write] = deque()
        self._thread: threading.Thread | None = None
        self._closing = False
        self.errors = 0
        """Writes that failed with ``OSError`` (each one logged once)."""
        self.written = 0
        """Writes done (appends and replacements)."""
        self.coalesced = 0
        """Replacements dropped because a newer content of the same file came first."""

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._closing

    def start(self) -> None:
        """Start the thread (in the process that will use it: a thread does not survive ``fork``)."""
        if self._thread is not None:
            return
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def append(self, path: str, data: bytes) -> None:
        self._submit(_Write(path, data, True))

    def replace(self, path: str, data: bytes) -> None:
        self._submit(_Write(path, data, False))

    def _submit(self, w: _Write) -> None:
        if not self.running:
            self._do(w)
            return
        with self._cv:
            if not w.append:
                for i, old in enumerate(self._queue):
                    if not old.append and old.path == w.path:
                        self._queue[i] = w  # same place in the order, newest content
                        self.coalesced += 1
                        return
            self._queue.append(w)
            self._cv.notify()

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Write what is pending, stop the thread; False if it did not finish within ``timeout_s``."""
        t = self._thread
        if t is None:
            return True
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        t.join(timeout_s)
        done = not t.is_alive()
        if done:
            self._thread = None
        else:
            _log.warning("file writer: %d writes still pending after %.0f s", len(self._queue), timeout_s)
        return done

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._queue or self._closing)
                if not self._queue:
                    return
                w = self._queue.popleft()
            self._do(w)

    def _do(self, w: _Write) -> None:
        try:
            write_file(w.path, w.data, w.append)
            self.written += 1
        except OSError as exc:
            self.errors += 1
            _log.warning("cannot write %s: %s", w.path, exc)
