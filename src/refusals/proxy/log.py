"""The proxy's verdict log: one JSON line per provider call, rotated by size.

Each line is a `proxy.verdict` record that `refusals scan` reads as it is (layout
`proxy-log`): the scan columns (provider, model, finish reason, category, explanation,
stage, tokens...) plus what only the proxy knows (path, status, latency, whether a
resend was blocked, the fallback it routed to). Headers, bodies and credentials are
never written.

Several proxy workers may share one file: each line is written with one `write` on a
file opened for appending, under an exclusive `flock` that also guards the rotation,
so no line is lost, cut or written twice.
"""

from __future__ import annotations

import fcntl
import os
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
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(self, record: dict[str, Any]) -> None:
        line = orjson.dumps(record) + b"\n"
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._reopen_if_rotated()
                if self.max_bytes and os.fstat(self._fd).st_size + len(line) > self.max_bytes:
                    self._rotate()
                os.write(self._fd, line)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _reopen_if_rotated(self) -> None:
        # Another worker may have rotated the file under us: write to the new one.
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        mine = os.fstat(self._fd)
        if current is None or (current.st_ino, current.st_dev) != (mine.st_ino, mine.st_dev):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = self._open()
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def _rotate(self) -> None:
        if os.fstat(self._fd).st_size == 0:
            return  # one line longer than the limit: it gets a file of its own
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
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)
