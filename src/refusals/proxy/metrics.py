"""The proxy's counters: always as JSON (`GET /_refusals/stats`), and in Prometheus'
text format (`GET /metrics`) when `prometheus-client` is installed (`refusals[metrics]`).

docs/proxy.md lists each metric with its labels.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from refusals.proxy.store import Blocked

__all__ = ["Metrics"]


class Metrics:
    """Counts what the proxy did. Thread-safe; one per app."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._prom: dict[str, Any] | None = None
        self._registry: Any = None
        try:
            import prometheus_client as prom  # noqa: PLC0415 - the refusals[metrics] extra
        except ImportError:
            return
        registry = prom.CollectorRegistry(auto_describe=True)
        self._registry = registry
        self._prom = {
            "requests": prom.Counter(
                "refusals_proxy_requests",
                "Model calls answered by an upstream.",
                ["upstream", "provider", "model", "finish_reason"],
                registry=registry,
            ),
            "blocked": prom.Counter(
                "refusals_proxy_blocked",
                "Refusals and content-filter stops an upstream gave.",
                ["upstream", "provider", "model", "kind", "category"],
                registry=registry,
            ),
            "resends": prom.Counter(
                "refusals_proxy_resends_blocked",
                "Resends of a refused prompt answered from the store, not sent upstream.",
                ["upstream", "model", "kind", "category"],
                registry=registry,
            ),
            "saved": prom.Counter(
                "refusals_proxy_tokens_saved",
                "Tokens the blocked resends would have spent again.",
                ["upstream", "model"],
                registry=registry,
            ),
            "spent": prom.Counter(
                "refusals_proxy_blocked_tokens",
                "Tokens spent on refused or filtered calls.",
                ["upstream", "model", "direction"],
                registry=registry,
            ),
            "fallbacks": prom.Counter(
                "refusals_proxy_fallbacks",
                "Resends routed to a fallback model.",
                ["upstream", "from_model", "to_model"],
                registry=registry,
            ),
        }

    def answered(
        self, upstream: str, fields: dict[str, Any], finish: str, fallback_from: str | None
    ) -> None:
        provider = str(fields.get("provider") or "")
        model = str(fields.get("model") or "")
        blocked = finish in ("refusal", "content_filter")
        with self._lock:
            self._counts["requests"] += 1
            if finish == "refusal":
                self._counts["refusals"] += 1
            elif finish == "content_filter":
                self._counts["content_filters"] += 1
            if fallback_from is not None:
                self._counts["fallbacks"] += 1
            if blocked:
                self._counts["blocked_input_tokens"] += int(fields.get("input_tokens") or 0)
                self._counts["blocked_output_tokens"] += int(fields.get("output_tokens") or 0)
        if self._prom is None:
            return
        self._prom["requests"].labels(upstream, provider, model, finish).inc()
        if fallback_from is not None:
            self._prom["fallbacks"].labels(upstream, fallback_from, model).inc()
        if blocked:
            category = str(fields.get("category") or "")
            self._prom["blocked"].labels(upstream, provider, model, finish, category).inc()
            for direction in ("input", "output"):
                tokens = int(fields.get(f"{direction}_tokens") or 0)
                self._prom["spent"].labels(upstream, model, direction).inc(tokens)

    def blocked(self, upstream: str, entry: Blocked, saved: int) -> None:
        with self._lock:
            self._counts["resends_blocked"] += 1
            self._counts["tokens_saved"] += saved
        if self._prom is None:
            return
        model = entry.model or ""
        self._prom["resends"].labels(
            upstream, model, entry.finish_reason, entry.category or ""
        ).inc()
        self._prom["saved"].labels(upstream, model).inc(saved)

    def unclassified(self, upstream: str) -> None:
        with self._lock:
            self._counts["unclassified"] += 1

    def store_error(self, reason: str) -> None:
        with self._lock:
            self._counts["store_errors"] += 1

    def log_error(self, reason: str) -> None:
        with self._lock:
            self._counts["log_errors"] += 1

    def stats(self) -> dict[str, int]:
        names = (
            "requests",
            "refusals",
            "content_filters",
            "resends_blocked",
            "tokens_saved",
            "fallbacks",
            "blocked_input_tokens",
            "blocked_output_tokens",
            "unclassified",
            "store_errors",
            "log_errors",
        )
        with self._lock:
            return {name: self._counts[name] for name in names}

    def exposition(self) -> str | None:
        """The Prometheus text format, or None without `prometheus-client`."""
        if self._registry is None:
            return None
        import prometheus_client as prom  # noqa: PLC0415

        return str(prom.generate_latest(self._registry).decode())
