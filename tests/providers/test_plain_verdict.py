"""`plain_verdict` (what `scan` counts most records by) says what `normalize` says.

Whenever it answers, the response `normalize` builds from the same payload (and the dict
path's, with the typed paths off) has that provider, model and finish reason, is a plain
answer (stop, length or tool calls), carries no error and was not served by a fallback.
Checked on every fixture body, with and without its provider name, on hypothesis
mutations of them, and on JSON the typed decoders read differently from orjson.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals.model import FinishReason, LLMResponse
from refusals.providers import NormalizeError, normalize, plain_verdict
from tests.providers._fast_support import fixture_bodies, provider_of, slow
from tests.providers.test_fast_path import mutated

BODIES = fixture_bodies()
PLAIN = {FinishReason.STOP, FinishReason.LENGTH, FinishReason.TOOL_CALLS}


def _check(payload: bytes | str, provider: str | None) -> bool:
    """Assert `plain_verdict` agrees with `normalize` where it answers; whether it did."""
    verdict = plain_verdict(payload, provider)
    if verdict is None:
        return False
    try:
        response = normalize(payload, provider)
    except NormalizeError as exc:  # pragma: no cover - the assertion's message
        raise AssertionError(f"plain verdict {verdict}, but normalize refuses: {exc}") from exc
    for read in (response, slow(payload, provider)):
        assert isinstance(read, LLMResponse)
        assert (read.provider, read.model, read.finish_reason) == verdict
        assert read.finish_reason in PLAIN
        assert read.error is None
        assert not read.served_by_fallback
    return True


def test_fixtures_agree_and_plain_answers_take_the_verdict() -> None:
    taken: Counter[str] = Counter()
    for name, data in BODIES:
        provider = provider_of(name)
        for named in (None, provider) if provider is not None else (None,):
            if _check(data, named) | _check(data.decode("utf-8", "replace"), named):
                taken[name.split("/", 1)[0]] += 1
    # Plain answers of every format scan meets most are counted from the verdict alone.
    for folder in ("anthropic", "openai-chat", "gemini", "bedrock", "groq", "xai"):
        assert taken[folder] > 0, f"no {folder} fixture took the plain verdict: {taken}"
    assert sum(taken.values()) > 60


def test_blocked_and_error_bodies_are_read_whole() -> None:
    checked = 0
    for _name, data in BODIES:
        try:
            response = normalize(data)
        except NormalizeError:
            continue
        if response.finish_reason in PLAIN and response.error is None:
            continue
        checked += 1
        assert plain_verdict(data) is None, _name
    assert checked > 100


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.booleans(), st.booleans())
def test_mutations_agree(case: tuple[str, Any], named: bool, indent: bool) -> None:
    name, body = case
    try:
        data = orjson.dumps(body, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:  # orjson cannot write integers past 64 bits: write them as text
        data = json.dumps(body, indent=2 if indent else None).encode()
    _check(data, provider_of(name) if named else None)


@pytest.mark.parametrize(
    "tail",
    [
        b',"zz":"\\ud800"}',
        b',"zz":"\xff"}',
        b',"zz":1e400}',
        b',"zz":18446744073709551616}',
        b',"zz":[' + b"[" * 1100 + b"]" * 1100 + b"]}",
        b"}garbage",
    ],
)
def test_odd_json_agrees(tail: bytes) -> None:
    for name, data in BODIES:
        stripped = data.rstrip()
        if stripped.endswith(b"}") and stripped.startswith(b"{"):
            odd = stripped[:-1] + tail
            _check(odd, None)
            _check(odd, provider_of(name))
