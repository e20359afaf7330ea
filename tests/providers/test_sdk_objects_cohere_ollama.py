"""Cohere and Ollama SDK response objects give the verdict of the same wire JSON.

As in `test_sdk_objects.py`: each SDK's own types parse our fixtures, and `normalize`
reads the object; fixtures a strict SDK model rejects are left out, and no list may be
empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from refusals.model import FinishReason, LLMResponse
from refusals.providers import normalize

from ._support import FIXTURES, agreed

cohere = pytest.importorskip("cohere")
ollama = pytest.importorskip("ollama")


def validating(pattern: str, build: Callable[[dict[str, Any]], Any]) -> list[tuple[str, Any]]:
    found = []
    for path in sorted((FIXTURES / "other").glob(pattern)):
        body = json.loads(path.read_bytes())
        if not isinstance(body, dict) or "error" in body or isinstance(body.get("message"), str):
            continue  # error bodies are no response objects
        try:
            found.append((str(path.relative_to(FIXTURES)), build(body)))
        except Exception:
            continue
    return found


COHERE_V2 = validating("**/cohere-v2-*.json", cohere.ChatResponse.model_validate)
COHERE_V1 = validating("**/cohere-v1-*.json", cohere.NonStreamedChatResponse.model_validate)
OLLAMA = validating("**/ollama-chat-*.json", ollama.ChatResponse.model_validate)


def same_as_wire(name: str, sdk_object: Any) -> LLMResponse:
    wire = normalize((FIXTURES / name).read_bytes())
    read = normalize(sdk_object)
    assert agreed(read, "provider", "api") == agreed(wire, "provider", "api"), name
    return read


def ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in cases]


def test_every_sdk_accepts_some_of_our_fixtures() -> None:
    assert len(COHERE_V2) >= 3 and len(COHERE_V1) >= 2 and len(OLLAMA) >= 3


@pytest.mark.parametrize(("name", "sdk_object"), COHERE_V2, ids=ids(COHERE_V2))
def test_cohere_v2_chat_responses_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), COHERE_V1, ids=ids(COHERE_V1))
def test_cohere_v1_chat_responses_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), OLLAMA, ids=ids(OLLAMA))
def test_ollama_chat_responses_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


def test_a_cohere_max_tokens_object_is_a_length_stop_not_a_success() -> None:
    [(_, sdk_object)] = [c for c in COHERE_V2 if c[0].endswith("cohere-v2-max-tokens.json")]
    assert normalize(sdk_object).finish_reason is FinishReason.LENGTH


def test_a_cohere_toxic_stop_object_is_a_content_filter_never_a_stop() -> None:
    [(_, sdk_object)] = [c for c in COHERE_V1 if c[0].endswith("cohere-v1-error-toxic.json")]
    response = normalize(sdk_object)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is None or not response.error.retryable
