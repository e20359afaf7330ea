"""The conversation fingerprint: the same model and messages, whatever the request's shape."""

from __future__ import annotations

from typing import Any

import pytest

from refusals.providers.fingerprint import conversation_fingerprint

ANTHROPIC: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Hi there"}],
}

SAME: list[tuple[str, dict[str, Any], str]] = [
    ("max_tokens", {**ANTHROPIC, "max_tokens": 4096, "temperature": 0.3}, "/v1/messages"),
    (
        "text parts",
        {
            "model": "claude-x",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi there"}]}],
        },
        "/v1/messages",
    ),
    (
        "whitespace",
        {"model": "claude-x", "messages": [{"role": "user", "content": " Hi\n there "}]},
        "",
    ),
    (
        "model case",
        {"model": "Claude-X", "messages": [{"role": "user", "content": "Hi there"}]},
        "",
    ),
    ("stream", {**ANTHROPIC, "stream": True, "metadata": {"user_id": "u"}}, ""),
]


@pytest.mark.parametrize(("name", "body", "path"), SAME, ids=[s[0] for s in SAME])
def test_the_same_prompt_in_another_shape_has_the_same_fingerprint(
    name: str, body: dict[str, Any], path: str
) -> None:
    assert conversation_fingerprint(body, path) == conversation_fingerprint(ANTHROPIC)


def test_another_prompt_model_or_system_prompt_is_another_fingerprint() -> None:
    base = conversation_fingerprint(ANTHROPIC)
    others = [
        {**ANTHROPIC, "model": "claude-y"},
        {**ANTHROPIC, "messages": [{"role": "user", "content": "Hi there!"}]},
        {**ANTHROPIC, "system": "Be brief."},
        {**ANTHROPIC, "messages": [*ANTHROPIC["messages"], {"role": "assistant", "content": "Hi"}]},
    ]
    prints = {conversation_fingerprint(body) for body in others}
    assert base not in prints and len(prints) == len(others)


def test_every_wire_is_read_and_the_path_names_the_model_when_the_body_does_not() -> None:
    gemini = {
        "contents": [{"role": "user", "parts": [{"text": "Hi there"}]}],
        "generationConfig": {},
    }
    bedrock = {
        "messages": [{"role": "user", "content": [{"text": "Hi there"}]}],
        "inferenceConfig": {},
    }
    responses = {"model": "claude-x", "input": "Hi there", "max_output_tokens": 5}
    chat = {"model": "claude-x", "messages": [{"role": "user", "content": "Hi there"}], "n": 1}
    base = conversation_fingerprint(ANTHROPIC)
    assert conversation_fingerprint(gemini, "/v1beta/models/claude-x:generateContent") == base
    assert conversation_fingerprint(bedrock, "/model/claude-x/converse") == base
    assert conversation_fingerprint(responses) == base
    assert conversation_fingerprint(chat) == base
    assert conversation_fingerprint({"input": ["a", "b"], "model": "e"}) is not None
    assert conversation_fingerprint({"file": "x"}) is None
    assert conversation_fingerprint([1, 2]) is None
