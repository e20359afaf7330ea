"""The request log: every request the mock received, with credentials removed.

"A refused request reached the server exactly once" is the assertion the whole project
leans on; the log is what it reads. The log is shared between the server's thread and
the test's, so every access holds a lock.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Any, Protocol

CREDENTIAL_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "key",
        "authorization",
        "password",
        "secret",
        "access_token",
        "session_token",
        "aws_secret_access_key",
    }
)
"""Body fields whose values are dropped before a body is stored (matched without case)."""

REDACTED = "[redacted]"

MAX_LOGGED_REQUESTS = 10_000
"""Requests whose details the log keeps (the oldest go first); counts stay exact."""
MAX_LOGGED_BODY_BYTES = 1 << 20
"""A request body larger than this is logged as a note of its size, not kept."""
OMITTED_BODY = "[body omitted]"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the mock saw it and what it answered."""

    path: str
    method: str
    wire: str | None
    model: str | None
    scenario: str | None
    stream: bool
    time: float
    body: Any
    status: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def without_credentials(value: Any) -> Any:
    """`value` with the values of credential-named fields replaced, at any depth."""
    if isinstance(value, dict):
        return {
            key: REDACTED
            if isinstance(key, str) and key.lower() in CREDENTIAL_FIELDS
            else without_credentials(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [without_credentials(item) for item in value]
    return value


class RequestLog:
    """Thread-safe record of `RecordedRequest`s with counts by model, scenario and wire.

    The details of the last `MAX_LOGGED_REQUESTS` requests are kept; the counts cover
    every request since the last `clear`, however many there were.
    """

    def __init__(self, max_items: int = MAX_LOGGED_REQUESTS) -> None:
        self._lock = threading.Lock()
        self._items: deque[RecordedRequest] = deque(maxlen=max_items)
        self._counts: Counter[tuple[str | None, str | None, str | None, str]] = Counter()
        self._total = 0

    def add(self, item: RecordedRequest) -> None:
        with self._lock:
            self._items.append(item)
            self._counts[item.scenario, item.model, item.wire, item.path] += 1
            self._total += 1

    def items(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    @property
    def dropped(self) -> int:
        """Requests counted whose details are no longer kept."""
        with self._lock:
            return self._total - len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._counts.clear()
            self._total = 0

    def count(
        self,
        *,
        scenario: str | None = None,
        model: str | None = None,
        wire: str | None = None,
        path: str | None = None,
    ) -> int:
        with self._lock:
            counts = list(self._counts.items())
        return sum(
            seen
            for (s, m, w, p), seen in counts
            if (scenario is None or s == scenario)
            and (model is None or m == model)
            and (wire is None or w == wire)
            and (path is None or p == path)
        )

    def summary(self) -> dict[str, Any]:
        """What `GET /_mock/requests` answers."""
        items = self.items()
        with self._lock:
            counts = list(self._counts.items())
        by_model: Counter[str] = Counter()
        by_scenario: Counter[str] = Counter()
        for (scenario, model, _, _), seen in counts:
            if model is not None:
                by_model[model] += seen
            if scenario is not None:
                by_scenario[scenario] += seen
        return {
            "requests": [item.to_json() for item in items],
            "dropped": self.dropped,
            "counts": {"by_model": dict(by_model), "by_scenario": dict(by_scenario)},
        }


class _Counted(Protocol):
    def count(
        self,
        *,
        scenario: str | None = None,
        model: str | None = None,
        wire: str | None = None,
        path: str | None = None,
    ) -> int: ...


def assert_sent_once(app: _Counted, **filters: str) -> None:
    """Fail unless exactly one request matching `filters` reached the mock."""
    seen = app.count(**filters)
    if seen != 1:
        raise AssertionError(f"expected exactly 1 request matching {filters}, got {seen}")


def assert_not_resent(app: _Counted, **filters: str) -> None:
    """Fail when more than one request matching `filters` reached the mock."""
    seen = app.count(**filters)
    if seen > 1:
        raise AssertionError(
            f"a request matching {filters} was sent {seen} times; expected at most once"
        )
