"""The request log: every request the mock received, with credentials removed.

"A refused request reached the server exactly once" is the assertion the whole project
leans on; the log is what it reads. The log is shared between the server's thread and
the test's, so every access holds a lock.
"""

from __future__ import annotations

import threading
from collections import Counter
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
    """Thread-safe list of `RecordedRequest`s with counts by model, scenario and wire."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[RecordedRequest] = []

    def add(self, item: RecordedRequest) -> None:
        with self._lock:
            self._items.append(item)

    def items(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def count(
        self,
        *,
        scenario: str | None = None,
        model: str | None = None,
        wire: str | None = None,
        path: str | None = None,
    ) -> int:
        return sum(
            1
            for item in self.items()
            if (scenario is None or item.scenario == scenario)
            and (model is None or item.model == model)
            and (wire is None or item.wire == wire)
            and (path is None or item.path == path)
        )

    def summary(self) -> dict[str, Any]:
        """What `GET /_mock/requests` answers."""
        items = self.items()
        by_model = Counter(item.model for item in items if item.model is not None)
        by_scenario = Counter(item.scenario for item in items if item.scenario is not None)
        return {
            "requests": [item.to_json() for item in items],
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
