"""The proxy's memory of refused prompts: fingerprint -> the refusal it got.

Two stores share one small interface. `SQLiteStore` is the default: one file in the
state directory, in WAL mode, so several proxy workers on one machine see each other's
refusals at once. `RedisStore` (`--store redis://...`, the `refusals[redis]` extra)
serves replicas on several machines. An entry lives for the proxy's window and then
expires: a prompt refused a day ago may be tried again.

Both also hold claims on prompts in flight: the process that sends a prompt upstream
claims it first, and an identical request in another process (a worker beside it, a
replica) waits for that answer instead of sending the prompt a second time.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

__all__ = [
    "Blocked",
    "FingerprintStore",
    "RedisStore",
    "SQLiteStore",
    "StoreError",
    "default_state_dir",
    "open_store",
]


class StoreError(Exception):
    """The fingerprint store cannot be opened or reached; the message says why."""


@dataclass(slots=True)
class Blocked:
    """A refused or filtered prompt, and the answer that said so, as recorded."""

    key: str
    upstream: str
    wire: str
    model: str | None
    finish_reason: str
    """`refusal` or `content_filter`."""
    category: str | None
    explanation: str | None
    request_id: str | None
    notice: str | None
    status: int
    streamed: bool
    media_type: str
    body: bytes
    """The upstream's body, byte for byte (its content coding undone)."""
    headers: list[tuple[str, str]] = field(default_factory=list)
    """The response headers worth replaying (request ids, the provider's own headers)."""
    input_tokens: int = 0
    output_tokens: int = 0
    recorded_at: float = 0.0

    def to_bytes(self) -> bytes:
        data = asdict(self)
        data["body"] = base64.b64encode(self.body).decode("ascii")
        return orjson.dumps(data)

    @classmethod
    def from_bytes(cls, raw: bytes) -> Blocked:
        data: dict[str, Any] = orjson.loads(raw)
        data["body"] = base64.b64decode(data["body"])
        data["headers"] = [(str(k), str(v)) for k, v in data.get("headers", [])]
        return cls(**data)


class FingerprintStore(Protocol):
    """Where refused prompts are remembered, for `window` seconds each."""

    async def get(self, key: str) -> Blocked | None: ...

    async def put(self, entry: Blocked, window: float) -> None: ...

    async def claim(self, key: str, owner: str, ttl: float) -> bool:
        """Whether `owner` now holds the prompt `key` in flight (for at most `ttl`
        seconds): False while another owner's claim holds."""
        ...

    async def release(self, key: str, owner: str) -> None:
        """Ends `owner`'s claim on `key` (nothing when another owner holds it)."""
        ...

    async def close(self) -> None: ...

    def describe(self) -> str:
        """Where the store is, for the start-up line (no credentials)."""
        ...


def default_state_dir() -> Path:
    """`$XDG_STATE_HOME/refusals` (by default `~/.local/state/refusals`)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "refusals"


class SQLiteStore:
    """Refused prompts in one SQLite file, shared by every process that opens it.

    Calls are short (one indexed row), so they run on the event loop's thread: a
    thread hop would cost more than the query.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the state directory for {self.path} ({exc.strerror})"
                ) from None
        try:
            self._db = sqlite3.connect(
                self.path, timeout=5.0, check_same_thread=False, isolation_level=None
            )
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS blocked ("
                " key TEXT PRIMARY KEY, expires REAL NOT NULL, entry BLOB NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS inflight ("
                " key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the fingerprint store {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self._puts = 0

    def describe(self) -> str:
        return f"sqlite:{self.path}"

    async def get(self, key: str) -> Blocked | None:
        with self._lock:
            row = self._db.execute(
                "SELECT entry FROM blocked WHERE key = ? AND expires > ?", (key, time.time())
            ).fetchone()
        return Blocked.from_bytes(row[0]) if row is not None else None

    async def put(self, entry: Blocked, window: float) -> None:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO blocked (key, expires, entry) VALUES (?, ?, ?)",
                (entry.key, now + window, entry.to_bytes()),
            )
            self._puts += 1
            if self._puts % 256 == 0:
                # Expired rows are never read again; drop them now and then.
                self._db.execute("DELETE FROM blocked WHERE expires <= ?", (now,))

    async def claim(self, key: str, owner: str, ttl: float) -> bool:
        now = time.time()
        with self._lock:
            # One statement, so atomic across processes: a new claim, or one taking over
            # an expired claim (its owner died or overran); a live claim stays.
            cursor = self._db.execute(
                "INSERT INTO inflight (key, owner, expires) VALUES (?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET owner = excluded.owner,"
                " expires = excluded.expires WHERE inflight.expires <= ?",
                (key, owner, now + ttl, now),
            )
            return cursor.rowcount == 1

    async def release(self, key: str, owner: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM inflight WHERE key = ? AND owner = ?", (key, owner))

    async def close(self) -> None:
        with self._lock:
            self._db.close()


class RedisStore:
    """Refused prompts in Redis, for proxy replicas on several machines."""

    PREFIX = "refusals:proxy:blocked:"
    CLAIMS = "refusals:proxy:inflight:"
    # Deletes a claim only while its owner holds it, in one step on the server.
    _RELEASE = (
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
        "return 0"
    )

    def __init__(self, url: str) -> None:
        try:
            import redis.asyncio as aioredis  # noqa: PLC0415 - the refusals[redis] extra
        except ImportError:
            raise StoreError(
                "a redis:// store needs the redis client: pip install 'refusals[redis]'"
            ) from None
        self.url = url
        self._client: Any = aioredis.from_url(url, socket_connect_timeout=5.0)

    def describe(self) -> str:
        # Credentials in the URL (redis://user:secret@host) stay out of every message.
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{rest.rpartition('@')[2]}"

    def check(self) -> None:
        """Raises `StoreError` when the server cannot be reached (a connection of its own:
        the store's async one belongs to the event loop that will serve)."""
        import redis  # noqa: PLC0415

        client = redis.Redis.from_url(self.url, socket_connect_timeout=5.0, socket_timeout=5.0)
        try:
            client.ping()
        except Exception as exc:
            raise StoreError(f"cannot reach {self.describe()} ({type(exc).__name__})") from None
        finally:
            client.close()

    async def get(self, key: str) -> Blocked | None:
        raw = await self._client.get(self.PREFIX + key)
        return Blocked.from_bytes(bytes(raw)) if raw is not None else None

    async def put(self, entry: Blocked, window: float) -> None:
        await self._client.set(self.PREFIX + entry.key, entry.to_bytes(), px=int(window * 1000))

    async def claim(self, key: str, owner: str, ttl: float) -> bool:
        taken = await self._client.set(self.CLAIMS + key, owner, nx=True, px=int(ttl * 1000))
        return bool(taken)

    async def release(self, key: str, owner: str) -> None:
        await self._client.eval(self._RELEASE, 1, self.CLAIMS + key, owner)

    async def close(self) -> None:
        await self._client.aclose()


def open_store(spec: str | None, state_dir: Path | None = None) -> SQLiteStore | RedisStore:
    """The store `--store` names: `redis://...`, `sqlite:PATH`, a path, or (None) the
    SQLite file in the state directory."""
    if spec is None or spec == "":
        return SQLiteStore((state_dir or default_state_dir()) / "proxy-blocked.sqlite3")
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(spec)
    if spec.startswith("sqlite:"):
        spec = spec[len("sqlite:") :]
    if "://" in spec:
        raise StoreError(
            f"unknown store {spec.split('://')[0]}://; use redis://HOST:PORT, sqlite:PATH or a path"
        )
    return SQLiteStore(spec)
