"""`refusals.normalize`: every input form, shape detection across providers, documented errors."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import FinishReason, NormalizeError, normalize, notice
from refusals.model import ErrorKind
from refusals.transport.streams import decode_stream

FIXTURES = Path(__file__).parent.parent / "fixtures"
REFUSAL = FIXTURES / "anthropic" / "vercel-refusal-cyber.json"


class PydanticLike:
    """Stands in for an official SDK object: what matters is `model_dump`."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return self._data


class ToDictLike:
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> dict[str, Any]:
        return self._data


def test_bytes_text_dict_and_sdk_objects_give_the_same_response() -> None:
    raw = REFUSAL.read_bytes()
    data = orjson.loads(raw)
    expected = normalize(raw)
    assert expected.finish_reason is FinishReason.REFUSAL
    for payload in (raw.decode(), data, bytearray(raw), PydanticLike(data), ToDictLike(data)):
        assert normalize(payload) == expected


def test_a_real_sdk_object_is_read_through_model_dump() -> None:
    types = pytest.importorskip("anthropic.types", reason="the anthropic SDK (bench extra)")
    message = types.Message.model_validate_json(REFUSAL.read_bytes())
    response = normalize(message)
    assert response.finish_reason is FinishReason.REFUSAL
    assert response.stop_details is not None
    assert response.stop_details.category == "cyber"


@pytest.mark.parametrize(
    ("path", "provider", "api"),
    [
        ("anthropic/vercel-refusal-cyber.json", "anthropic", "messages"),
        ("openai-chat/refusal.json", "openai", "chat.completions"),
        ("azure/chat-content-filter-results.json", "azure", "chat.completions"),
        ("openrouter/gemini-length-native-max-tokens.json", "openrouter", "chat.completions"),
        ("openai-responses/moderation-block-policy-flagged.json", "openai-responses", "responses"),
        ("gemini/finish-safety-blocked.json", "gemini", "generateContent"),
        ("gemini/prompt-blocked-model-armor.json", "vertex", "generateContent"),
        ("bedrock/converse-max-tokens.json", "bedrock", "converse"),
        ("other/cohere-v2-max-tokens.json", "cohere", "chat"),
    ],
)
def test_the_wire_format_is_recognised_from_the_shape(path: str, provider: str, api: str) -> None:
    response = normalize((FIXTURES / path).read_bytes())
    assert (response.provider, response.api) == (provider, api)


def test_an_unknown_provider_name_is_a_normalize_error() -> None:
    with pytest.raises(NormalizeError, match="unknown provider 'nope'; expected one of"):
        normalize(REFUSAL.read_bytes(), provider="nope")


def test_an_error_body_of_no_known_shape_is_classified_by_its_status() -> None:
    response = normalize(b'{"detail": "upstream timed out"}', status=504)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT
    assert response.error.retryable


def test_a_non_json_error_page_is_classified_by_its_status() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    response = normalize(page, status=502)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.retryable


def test_a_gemini_error_wrapped_in_an_array_is_read_when_the_provider_is_named() -> None:
    body = (
        b'[{"error": {"code": 429, "message": "Resource exhausted",'
        b' "status": "RESOURCE_EXHAUSTED"}}]'
    )
    response = normalize(body, provider="gemini", status=429)
    assert response.finish_reason is FinishReason.ERROR
    assert response.error is not None
    assert response.error.kind is ErrorKind.TRANSIENT


def test_a_policy_error_body_becomes_a_content_filter_with_its_notice() -> None:
    body = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy.",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": True, "severity": "high"},
                    "violence": {"filtered": False, "severity": "safe"},
                },
            },
        }
    }
    response = normalize(body, provider="azure", status=400)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None
    assert not response.error.retryable
    text = notice(response)
    assert text is not None
    assert text.startswith("The provider's content filter blocked this request (category: hate)")


@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_nothing_but_normalize_error(raw: bytes) -> None:
    with contextlib.suppress(NormalizeError):
        normalize(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "choices",
                "type",
                "content",
                "stop_reason",
                "candidates",
                "output",
                "stopReason",
                "error",
                "object",
                "message",
                "finish_reason",
                "done",
                "promptFeedback",
                "status",
            ]
        ),
        json_values,
        max_size=6,
    ),
    st.none() | st.sampled_from([400, 403, 429, 500]),
)
def test_random_objects_with_telling_keys_raise_nothing_but_normalize_error(
    body: dict[str, Any], status: int | None
) -> None:
    with contextlib.suppress(NormalizeError):
        normalize(body, status=status)


# Every wire format: a payload that carries a refusal or filter signal stays blocked ------
#
# The signal payloads are every fixture (recorded or written, full body or stream, of every
# wire format) that reads as a refusal or a content-filter stop. Hypothesis then changes
# what must not matter: unknown keys with hostile values (huge integers, deep nesting, odd
# Unicode), odd Unicode appended to free text, other choices or candidates beside choice 0,
# the input form (bytes, text, a decoded dict), response headers that advise a retry, the
# chunking of a stream and events sent after its terminal event. None of it may turn the
# verdict into a stop, or make the response's error retryable.

_ERROR_STATUS = re.compile(r"(?:^|[-_])(?:error|http)-?(\d{3})(?:\D|$)")
_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
_ODD = st.sampled_from(
    ["\ud83d", "\udfff", "\u202e", "\u200b", "\u2028", "\x00", "\ufeff", "\U0001f600", "e\u0301"]
)
_TEXT_KEYS = frozenset(
    {
        "text",
        "explanation",
        "refusal",
        "finishMessage",
        "blockReasonMessage",
        "outputText",
        "generation",
        "actionReason",
    }
)


def _status_of(path: Path) -> int | None:
    found = _ERROR_STATUS.search(path.name)
    return int(found.group(1)) if found else None


def _blocked_bodies() -> list[tuple[Path, int | None]]:
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        status = _status_of(path)
        try:
            response = normalize(path.read_bytes(), status=status)
        except NormalizeError:
            continue
        if response.finish_reason in _BLOCKED and not (response.error and response.error.retryable):
            found.append((path, status))
    return found


def _blocked_streams() -> list[Path]:
    found = []
    for pattern in ("*.sse", "*.chunks.txt", "*.ndjson"):
        for path in sorted(FIXTURES.rglob(pattern)):
            response, _ = decode_stream(path.read_bytes())
            if response.finish_reason in _BLOCKED:
                found.append(path)
    return found


BLOCKED_BODIES = _blocked_bodies()
BLOCKED_STREAMS = _blocked_streams()


def test_the_signal_payloads_cover_every_wire_format() -> None:
    apis = {normalize(p.read_bytes(), status=s).api for p, s in BLOCKED_BODIES}
    apis |= {decode_stream(p.read_bytes())[0].api for p in BLOCKED_STREAMS}
    assert {
        "messages",
        "chat.completions",
        "responses",
        "generateContent",
        "converse",
        "invoke",
        "chat",
    } <= apis


@st.composite
def _noisy(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """`value` with unknown keys added and odd Unicode appended to free text."""
    if isinstance(value, dict):
        out = {k: draw(_noisy(v, depth + 1)) for k, v in value.items()}
        for key in ("choices", "candidates"):
            items = out.get(key)
            if isinstance(items, list) and items and draw(st.booleans()):
                # Another choice first in the list: choice 0 is still the response.
                other = {
                    "index": 3,
                    "finish_reason": "stop",
                    "finishReason": "STOP",
                    "message": {"role": "assistant", "content": "ok"},
                    "content": {"parts": [{"text": "ok"}]},
                }
                out[key] = [other, *items]
        if draw(st.integers(0, 4)) == 0:
            out[f"x_unknown_{depth}"] = draw(_HOSTILE_VALUES)
        for key in _TEXT_KEYS & out.keys():
            if isinstance(out[key], str) and draw(st.booleans()):
                out[key] = out[key] + draw(_ODD)
        return out
    if isinstance(value, list):
        return [draw(_noisy(item, depth + 1)) for item in value]
    return value


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


_HOSTILE_VALUES = st.one_of(
    st.integers(min_value=2**64, max_value=2**80),
    st.integers(min_value=1, max_value=20).map(lambda n: _deep(n * 60)),
    _ODD,
    st.text(max_size=6),
    st.none(),
)
_HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "x-should-retry": st.sampled_from(["true", "false"]),
        "Retry-After": st.sampled_from(["0", "30", "Wed, 21 Oct 2015 07:28:00 GMT"]),
        "x-request-id": st.just("req_noise"),
    },
)


def _wire_bytes(value: Any) -> bytes:
    # Lone surrogates go on the wire escaped, as a JSON writer escapes them.
    return json.dumps(value).encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_body_carrying_a_refusal_or_filter_signal_is_read_as_stop_or_retryable(
    data: st.DataObject,
) -> None:
    path, status = data.draw(st.sampled_from(BLOCKED_BODIES))
    body = data.draw(_noisy(orjson.loads(path.read_bytes())))
    form = data.draw(st.sampled_from(["bytes", "text", "dict"]))
    payload: Any = body if form == "dict" else _wire_bytes(body)
    if form == "text":
        payload = payload.decode()
    headers = data.draw(_HEADERS)
    response = normalize(payload, status=status, headers=headers)
    assert response.finish_reason in _BLOCKED, path.name
    assert not (response.error is not None and response.error.retryable), path.name
    assert notice(response) is not None


def _event_after_end(data: st.DataObject) -> bytes:
    body = data.draw(
        st.sampled_from(
            [
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "injected"},
                },
                {
                    "id": "x",
                    "object": "chat.completion.chunk",
                    "model": "m",
                    "choices": [
                        {"index": 0, "delta": {"content": "injected"}, "finish_reason": "stop"}
                    ],
                },
                {
                    "candidates": [
                        {"content": {"parts": [{"text": "injected"}]}, "finishReason": "STOP"}
                    ]
                },
                {"messageStop": {"stopReason": "end_turn"}},
                {"type": "error", "error": {"type": "overloaded_error", "message": "x"}},
            ]
        )
    )
    return b"data: " + orjson.dumps(body) + b"\n\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_stream_carrying_a_refusal_or_filter_signal_is_read_as_stop_or_retryable(
    data: st.DataObject,
) -> None:
    path = data.draw(st.sampled_from(BLOCKED_STREAMS))
    raw = path.read_bytes()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    response, _ = decode_stream([p for p in pieces if p])
    assert response.finish_reason in _BLOCKED, path.name
    assert not (response.error is not None and response.error.retryable), path.name
    framing_is_sse = raw.lstrip()[:5] in (b"data:", b"event") or b"\ndata:" in raw[:200]
    if framing_is_sse:
        # Whatever comes after the stream's end (or after the block) changes no verdict.
        extra = b"".join(_event_after_end(data) for _ in range(data.draw(st.integers(1, 3))))
        later, _ = decode_stream(raw + b"\n\n" + extra)
        assert later.finish_reason in _BLOCKED, path.name
        assert not (later.error is not None and later.error.retryable), path.name
