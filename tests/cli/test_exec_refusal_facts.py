"""The `refusal` event carries the facts its notice quotes, on every OpenAI-shaped wire."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refusals import FinishReason, normalize
from refusals.mock import MockServer

from ._exec_support import WIRES, exec_on


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


@pytest.mark.parametrize("stream", [False, True], ids=["no-stream", "stream"])
@pytest.mark.parametrize("wire", ["openai", "azure", "openai-responses", "openrouter", "xai"])
def test_a_refusal_without_partial_text_gives_its_explanation(
    server: MockServer, wire: str, stream: bool
) -> None:
    run = exec_on(
        WIRES[wire], server.base_url, "refusal", *([] if stream else ["--no-stream"]), "hi"
    )
    assert run.exit_code == 3, run.stdout
    refusal = run.one("refusal")
    assert refusal["explanation"]
    # The notice quotes exactly that explanation.
    assert refusal["explanation"].rstrip(".").lower()[:40] in refusal["notice"].lower()


def test_an_ollama_openai_shaped_invalid_prompt_400_is_a_content_filter() -> None:
    body = {
        "error": {
            "message": "Invalid prompt: your prompt was flagged as potentially violating "
            "our usage policy.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_prompt",
        }
    }
    for provider in ("openai", "ollama"):
        response = normalize(body, provider=provider, status=400)
        assert response.finish_reason is FinishReason.CONTENT_FILTER, provider
