"""The proxy's verdict log: one JSON line per provider call, rotated by size.

Each line is a `proxy.verdict` record that `refusals scan` reads as it is (layout
`proxy-log`): the scan columns (provider, model, finish reason, category, explanation,
stage, tokens...) plus what only the proxy knows (path, status, latency, whether a
resend was blocked, the fallback it routed to). Headers, bodies and credentials are
never written.

Lines are written by a thread of the log's own, in batches, so that a slow disk never
delays an answer; `flush()` waits for what was handed over, and `close()` writes the
rest. Several proxy workers may share one file: each batch is written with one `write`
on a file opened for appending, under an exclusive `flock` that also guards the
rotation, so no line is lost, cut or written twice.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
from pathlib import Path
from typing import Any

import orjson

__all__ = ["DEFAULT_MAX_BYTES", "VerdictLog"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_BACKUPS = 5


class VerdictLog:
    """Appends records to `path`; past `max_bytes` it becomes `path.1` (and so on, up to
    `backups` files) and a new `path` starts."""

    def __init__(
        self, path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES, backups: int = DEFAULT_BACKUPS
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = self._open()
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._pending = 0
        self._done = threading.Condition()
        self.errors = 0
        """Batches that could not be written (a full disk, say)."""
        self._thread = threading.Thread(target=self._run, name="refusals-proxy-log", daemon=True)
        self._thread.start()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, record: dict[str, Any]) -> None:
        """Hands one record to the writer thread (returns at once)."""
        line = orjson.dumps(record) + b"\n"
        with self._done:
            self._pending += 1
        self._queue.put(line)

    def flush(self, timeout: float = 10.0) -> bool:
        """Waits until every record handed over is written; False on timeout."""
        with self._done:
            return self._done.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        """Writes what is left, then closes the file."""
        self._queue.put(None)
        self._thread.join()
        os.close(self._fd)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            lines = [first]
            while len(lines) < 512:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # seen after this batch is written
                    break
                lines.append(more)
            try:
                self._write(lines)
            except OSError:
                self.errors += 1
            with self._done:
                self._pending -= len(lines)
                self._done.notify_all()

    def _write(self, lines: list[bytes]) -> None:
        self._lock_current()
        try:
            batch: list[bytes] = []
            size = os.fstat(self._fd).st_size
            for line in lines:
                # `while`: the file a rotation lands on may be one another writer has
                # filled already, and the line is checked against it again.
                while self.max_bytes and size + len(line) > self.max_bytes and (batch or size):
                    if batch:
                        os.write(self._fd, b"".join(batch))
                        batch = []
                    self._rotate()
                    size = os.fstat(self._fd).st_size
                batch.append(line)
                size += len(line)
            if batch:
                os.write(self._fd, b"".join(batch))
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _lock_current(self) -> None:
        """Holds the lock on the file that is `path` now. Another writer may have rotated
        it under us: the lock is then taken again on the new file, so only one writer at
        a time can write to `path` or rotate it."""
        while True:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            mine = os.fstat(self._fd)
            if current is not None and (current.st_ino, current.st_dev) == (
                mine.st_ino,
                mine.st_dev,
            ):
                return
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = self._open()

    def _rotate(self) -> None:
        for index in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        if self.backups > 0:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink()
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = self._open()
        self._lock_current()
