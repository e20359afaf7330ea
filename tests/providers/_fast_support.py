"""Shared checks of the typed fast path against the dict path (see providers/_common.py).

`slow(...)` runs `normalize` with the fast path switched off; `agree(...)` runs both on the
same payload and asserts the same response, or the same error, so a fast path can only be
faster, never different.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from refusals import providers
from refusals.events import StreamEvent, WireDecoder
from refusals.model import LLMResponse
from refusals.providers import NormalizeError, normalize
from refusals.transport.streams import StreamDecoder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Folder of a fixture → the provider name a caller would pass for it.
FOLDER_PROVIDER = {
    "anthropic": "anthropic",
    "azure": "azure",
    "bedrock": "bedrock",
    "deepseek": "deepseek",
    "gemini": "gemini",
    "groq": "groq",
    "mistral": "mistral",
    "ollama": "ollama",
    "openai-chat": "openai",
    "openai-responses": "openai-responses",
    "openrouter": "openrouter",
    "xai": "xai",
}


def _no_fast(payload: bytes | str, provider: str | None) -> None:
    return None


@contextlib.contextmanager
def fast_off() -> Iterator[None]:
    saved = providers._fast
    providers._fast = _no_fast
    try:
        yield
    finally:
        providers._fast = saved


def outcome(payload: Any, provider: str | None, status: int | None = None) -> object:
    """The response, or the error type and message, that `normalize` gives."""
    try:
        return normalize(payload, provider=provider, status=status)
    except (NormalizeError, TypeError) as exc:
        return (type(exc).__name__, str(exc))


def slow(payload: Any, provider: str | None = None, status: int | None = None) -> object:
    with fast_off():
        return outcome(payload, provider, status)


def agree(payload: bytes | str, provider: str | None = None, status: int | None = None) -> object:
    """Assert the fast and dict paths give the same outcome; return it."""
    expected = slow(payload, provider, status)
    got = outcome(payload, provider, status)
    assert got == expected, (
        f"fast path differs for provider={provider!r}:\n{got!r}\n!=\n{expected!r}"
    )
    if isinstance(expected, LLMResponse):
        assert isinstance(got, LLMResponse)
        # Equal dataclasses can still differ in the types of their parts.
        assert type(got.finish_reason) is type(expected.finish_reason)
        assert [type(d) for d in got.reasoning_details or ()] == [
            type(d) for d in expected.reasoning_details or ()
        ]
    return got


def fixture_bodies() -> list[tuple[str, bytes]]:
    """Every JSON fixture body (responses, errors and written ones), by relative path."""
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        found.append((str(path.relative_to(FIXTURES)), path.read_bytes()))
    return found


def provider_of(name: str) -> str | None:
    folder = name.split("/", 1)[0]
    if folder == "other":
        base = name.rsplit("/", 1)[-1]
        return next((vendor for vendor in ("cohere", "ollama") if base.startswith(vendor)), None)
    return FOLDER_PROVIDER.get(folder)


def decoded_fixtures() -> list[tuple[str, Any]]:
    """Fixture bodies that are JSON objects, decoded, for mutation."""
    found = []
    for name, data in fixture_bodies():
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append((name, value))
    return found


def all_keys(values: list[Any]) -> list[str]:
    """Every object key that occurs anywhere in `values`, sorted."""
    keys: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                keys.add(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for value in values:
        walk(value)
    return sorted(keys)


def taken_fast(payload: bytes, provider: str | None) -> bool:
    """Whether the fast path answered for this payload (rather than the dict path)."""
    return providers._fast(payload, provider) is not None


@contextlib.contextmanager
def strict_off(decoder: type[WireDecoder]) -> Iterator[None]:
    """A stream decoder class with its typed fast path switched off (the base's `read_strict`)."""
    saved = decoder.read_strict
    decoder.read_strict = WireDecoder.read_strict  # type: ignore[method-assign]
    try:
        yield
    finally:
        decoder.read_strict = saved  # type: ignore[method-assign]


def run_stream(
    raw: bytes, provider: str | None, chunk: int
) -> tuple[list[StreamEvent], LLMResponse]:
    """Every event and the final response of `raw` fed in `chunk`-byte pieces."""
    decoder = StreamDecoder(provider)
    events: list[StreamEvent] = []
    for start in range(0, len(raw), chunk):
        events += decoder.feed(raw[start : start + chunk])
    events += decoder.close()
    return events, decoder.response
