"""Secrets: a key put into any error text of any provider survives nowhere in the result.

One redaction function (`_common.redact`) runs wherever provider text becomes a message;
the property test below inserts a sentinel key, in every form a provider or a gateway may
echo, into every error-text shape we read (bodies, pages, stream error events, errors in a
200 body, filter and moderation errors) and looks for it in the message, the notice, the
repr and every reasoning detail.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.model import LLMResponse
from refusals.providers import bedrock, normalize
from refusals.providers._common import (
    _ASCII_FOLD,
    _KEPT_NAMES,
    _SECRETS,
    REDACTED,
    may_hold_secret,
    redact,
)
from refusals.transport.streams import decode_stream

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def chars(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=size)


def with_digit(alphabet: str, size: int) -> st.SearchStrategy[str]:
    # Unprefixed keys are told from prose by a digit among their characters.
    return chars(alphabet, size - 1).map(lambda s: s[: size // 2] + "7" + s[size // 2 :])


# (the text that carries the key, the part of it that must not survive)
KeyText = tuple[str, str]


def _openai(secret: str) -> KeyText:
    return f"Incorrect API key provided: sk-proj-{secret}.", secret


KEY_FORMS: dict[str, st.SearchStrategy[KeyText]] = {
    "openai echoed": chars(URLSAFE, 40).map(_openai),
    "openai bare": chars(ALNUM, 40).map(lambda s: (f"sk-proj-{s}", s)),
    "glued to a word": chars(ALNUM, 32).map(lambda s: (f"api_key_sk-{s}", s)),
    "anthropic": chars(URLSAFE, 40).map(lambda s: (f"x-api-key: sk-ant-api03-{s}", s)),
    "groq": chars(ALNUM, 40).map(lambda s: (f"gsk_{s}", s)),
    "xai": chars(ALNUM, 40).map(lambda s: (f"xai-{s}", s)),
    "google key": chars(URLSAFE, 35).map(lambda s: (f"?key=AIza{s}", s)),
    "google key glued": chars(URLSAFE, 35).map(lambda s: (f"key_AIza{s}", s)),
    "azure hex after key words": with_digit("0123456789abcdef", 32).map(
        lambda s: (f"Invalid subscription key {s}", s)
    ),
    "azure header": with_digit("0123456789abcdef", 32).map(
        lambda s: (f"Ocp-Apim-Subscription-Key: {s}", s)
    ),
    "mistral in quotes": with_digit(ALNUM, 32).map(lambda s: (f"the key '{s}' is not valid", s)),
    "cohere after token": with_digit(ALNUM, 40).map(lambda s: (f"invalid api token: {s}", s)),
    "cohere in quotes": with_digit(ALNUM, 40).map(lambda s: (f'"{s}"', s)),
    "jwt": st.tuples(chars(URLSAFE, 20), chars(URLSAFE, 30), chars(URLSAFE, 43)).map(
        lambda p: (f"Bearer eyJ{p[0]}.eyJ{p[1]}.{p[2]}", p[1])
    ),
    "jwt bare": st.tuples(chars(URLSAFE, 20), chars(URLSAFE, 30)).map(
        lambda p: (f"token eyJ{p[0]}.eyJ{p[1]}", p[1])
    ),
    "google oauth": chars(URLSAFE, 60).map(lambda s: (f"ya29.{s}", s)),
    "aws access key id": chars(string.ascii_uppercase + string.digits, 16).map(
        lambda s: (f"ASIA{s}", s)
    ),
    "aws key id glued": chars(string.ascii_uppercase + string.digits, 16).map(
        lambda s: (f"Credential=AKIA{s}/20270101/us-east-1/bedrock/aws4_request", s)
    ),
    "aws secret": chars(B64, 40).map(lambda s: (f"aws_secret_access_key={s}", s)),
    "aws session token": chars(B64, 120).map(
        lambda s: (f"X-Amz-Security-Token: IQoJb3JpZ2lu{s}", s)
    ),
    "aws session token bare": chars(B64, 120).map(lambda s: (f"IQoJb3JpZ2lu{s}", s)),
}

PROSE = st.text(string.ascii_letters + " .,:;()", max_size=40).map(lambda s: f"{s} " if s else s)


# Error-text shapes: a message → what we read. Each returns the response to search.
def _body(payload: Any, status: int | None, provider: str | None = None, **kw: Any) -> Any:
    return lambda: normalize(json.dumps(payload).encode(), provider, status, **kw)


def _stream(raw: bytes, provider: str | None = None) -> Callable[[], LLMResponse]:
    return lambda: decode_stream(raw, provider)[0]


def _sse(*events: tuple[str | None, Any]) -> bytes:
    out = b""
    for name, body in events:
        if name is not None:
            out += f"event: {name}\n".encode()
        out += b"data: " + json.dumps(body).encode() + b"\n\n"
    return out


def shapes(m: str) -> dict[str, Callable[[], LLMResponse]]:
    anthropic_start = {
        "type": "message_start",
        "message": {"id": "msg", "model": "claude", "content": [], "usage": {}},
    }
    chat_chunk = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o"}
    return {
        "anthropic body": _body({"type": "error", "error": {"type": "x", "message": m}}, 401),
        "anthropic page": lambda: normalize(f"<html><title>{m}</title></html>", "anthropic", 502),
        "openai body": _body({"error": {"message": m, "type": "invalid_request_error"}}, 401),
        "openai plain text": lambda: normalize(m, None, 500),
        "azure filter error": _body(
            {
                "error": {
                    "code": "content_filter",
                    "message": m,
                    "innererror": {"code": "ResponsibleAIPolicyViolation"},
                }
            },
            400,
        ),
        "openrouter raw": _body(
            {
                "error": {
                    "code": 403,
                    "message": "Provider returned error",
                    "metadata": {"raw": m, "provider_name": "P"},
                }
            },
            403,
        ),
        "openrouter moderation": _body(
            {
                "error": {
                    "code": 403,
                    "message": m,
                    "metadata": {"reasons": ["hate"], "flagged_input": m},
                }
            },
            403,
        ),
        "openrouter error in a 200 body": _body(
            {
                "id": "gen",
                "object": "chat.completion",
                "model": "x",
                "provider": "P",
                "choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": "stop"}],
                "error": {"code": 502, "message": m},
            },
            None,
        ),
        "xai": _body({"code": "Client specified an invalid argument", "error": m}, 400, "xai"),
        "mistral": _body({"object": "error", "message": m, "type": "invalid_request"}, 401),
        "gemini": _body({"error": {"code": 400, "message": m, "status": "INVALID_ARGUMENT"}}, 400),
        "gemini array": _body([{"error": {"code": 403, "message": m, "status": "X"}}], None),
        "bedrock header": _body(
            {"message": m}, 403, headers={"x-amzn-errortype": "AccessDeniedException"}
        ),
        "bedrock boto3": _body({"Error": {"Code": "AccessDeniedException", "Message": m}}, None),
        "cohere": _body({"message": m}, 401, "cohere"),
        "ollama": _body({"error": m}, 500, "ollama"),
        "azure filter did not run": _body(
            {
                "id": "c",
                "object": "chat.completion",
                "model": "gpt-4o",
                "choices": [
                    {
                        "index": 0,
                        "message": {"content": "a"},
                        "finish_reason": "stop",
                        "content_filter_results": {"error": {"code": "x", "message": m}},
                    }
                ],
            },
            None,
        ),
        "anthropic stream error": _stream(
            _sse(
                ("message_start", anthropic_start),
                ("error", {"type": "error", "error": {"type": "overloaded_error", "message": m}}),
            )
        ),
        "chat stream error body": _stream(
            _sse((None, {**chat_chunk, "choices": []}), (None, {"error": {"message": m}}))
        ),
        "responses stream error": _stream(
            _sse(("error", {"type": "error", "code": "x", "message": m, "sequence_number": 1}))
        ),
        "gemini stream error": _stream(
            _sse((None, {"error": {"code": 500, "message": m, "status": "INTERNAL"}}))
        ),
        "bedrock stream exception": _stream(
            json.dumps({"messageStart": {"role": "assistant"}}).encode()
            + b"\n"
            + json.dumps({"validationException": {"message": m}}).encode()
            + b"\n"
        ),
        "ollama stream error": _stream(json.dumps({"error": m}).encode() + b"\n", "ollama"),
        "bedrock event-stream error headers": lambda: _service_error(m),
    }


def _service_error(message: str) -> LLMResponse:
    decoder = bedrock.StreamReader("bedrock")
    decoder.service_error("InternalFailure", message)
    decoder.close()
    return decoder.response


SHAPE_NAMES = sorted(shapes("x"))


def texts_of(response: LLMResponse) -> list[str]:
    found = [repr(response), notice(response) or ""]
    if response.error is not None:
        found.append(response.error.message or "")
    for detail in response.reasoning_details or ():
        found.append(detail if isinstance(detail, str) else json.dumps(detail))
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    form=st.sampled_from(sorted(KEY_FORMS)),
    shape=st.sampled_from(SHAPE_NAMES),
    before=PROSE,
    after=PROSE,
    data=st.data(),
)
def test_a_key_in_any_error_text_of_any_provider_survives_nowhere(
    form: str, shape: str, before: str, after: str, data: st.DataObject
) -> None:
    carrier, secret = data.draw(KEY_FORMS[form])
    # Prose that happens to spell the key (`AAAA…` around an all-`A` key id) is prose, not
    # a leak: only the key the carrier put in must go.
    assume(secret[:12] not in before and secret[:12] not in after)
    message = f"{before}{carrier} {after}".strip()
    response = shapes(message)[shape]()
    for text in texts_of(response):
        assert secret not in text, (form, shape, text)
        assert secret[:12] not in text, (form, shape, text)


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_every_error_shape_carries_the_provider_message_somewhere(shape: str) -> None:
    # Otherwise the property above would pass for a shape that drops the text entirely.
    response = shapes("Something went wrong here")[shape]()
    assert any("Something went wrong here" in text for text in texts_of(response)), shape


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the token limit was exceeded", "the token limit was exceeded"),
        ("desk-lamp task_manager risk-free", "desk-lamp task_manager risk-free"),
        ("api key abcdefghij is wrong", "api key abcdefghij is wrong"),
        ("api_key_sk-abcdef1234567890 bad", f"api_key_{REDACTED} bad"),
        (
            "invalid api token: Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90",
            "invalid api token: " + REDACTED,
        ),
        ("Credential=AKIAABCDEFGHIJKLMNOP/2027", f"Credential={REDACTED}/2027"),
    ],
)
def test_redaction_keeps_prose_and_names_and_takes_only_the_secret(
    text: str, expected: str
) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "prose",
    [
        "You didn't provide an API key: send it in an Authorization: Bearer header",
        "Bearer token required",
        "Authorization header missing or invalid",
        "The API key: provided value was empty",
    ],
)
def test_prose_after_a_key_name_is_kept_whole(prose: str) -> None:
    assert redact(prose) == prose


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Authorization: Bearer tokenXYZ123", "Authorization: Bearer [redacted]"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"),
        ("bad Bearer header-7f3a", "bad Bearer [redacted]"),
        ("API key: sk-proj-abc12345", "API key: [redacted]"),
    ],
)
def test_a_secret_that_starts_like_a_prose_word_is_still_redacted(text: str, shown: str) -> None:
    assert redact(text) == shown


# --- the pre-filter: it may skip the regular expression only where it matches nothing ---

_ANCHOR_PIECES = st.sampled_from(
    [
        "Key", "KEY=", "tok", "TOKEN=", "team:", "https://u:", "@host", "Bearer ", "bearer",
        "Authorization: ", "sk-", "SK_", "gsk_", "xai-", "AKIA", "AIza", "ya29.", "eyJ",
        "ſk-", "\u0130", "\u0131", "\u212a", "K", "\"", "'", "`", "0123456789abcdef", ".",
        "api key id:", "Incorrect API key provided: ", "key_", "x-api-key: ", "=", "@", "://",
        "aws_session_token=", "SessionToken", "secret ", "password", "credentials", "xai_",
        "pk-", "IQoJb3JpZ2lu", "api_key=", "-", "_", " ", "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
        "abc123defghij456klm", "x9", "\u00e9", "api", ":", "authorization",
    ]
)  # fmt: skip
_TEXT_PIECES = _ANCHOR_PIECES | st.text(max_size=12)


def _unfiltered(text: str, keep_names: bool) -> str:
    def replace(match: Any) -> str:
        name = match.lastgroup
        if name is None or not (keep_names or name in _KEPT_NAMES):
            return REDACTED
        return str(match.group(name)) + REDACTED

    return _SECRETS.sub(replace, text)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXT_PIECES, max_size=16).map("".join), st.booleans())
def test_the_pre_filter_never_changes_what_redaction_gives(text: str, keep_names: bool) -> None:
    assert redact(text, keep_names=keep_names) == _unfiltered(text, keep_names)
    if not may_hold_secret(text):
        assert _unfiltered(text, keep_names) == text


def test_the_fold_table_holds_every_non_ascii_letter_case_insensitive_matching_takes() -> None:
    ascii_letter = re.compile(r"(?i)[a-z]")
    found = {
        chr(code) for code in range(0x80, 0x110000) if ascii_letter.match(chr(code)) is not None
    }
    assert found == {chr(c) for c in _ASCII_FOLD}
