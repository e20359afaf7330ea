"""Request paths: each format's folder lists the paths its `endpoint()` builds, and
`endpoint_for_path` recognises every URL the clients call, behind any prefix."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from refusals.providers import endpoint_for_path, path_with_model
from refusals.providers.anthropic import request as anthropic_request
from refusals.providers.bedrock import request as bedrock_request
from refusals.providers.cohere import request as cohere_request
from refusals.providers.gemini import request as gemini_request
from refusals.providers.openai_chat import request as chat_request
from refusals.providers.openai_responses import request as responses_request

GEMINI = "https://generativelanguage.googleapis.com"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"
OPENAI = "https://api.openai.com/v1"
GROQ = "https://api.groq.com/openai/v1"
PRO = "gemini-2.5-pro"
CLAUDE = "anthropic.claude-x:0"
VERTEX = gemini_request.endpoint(
    "https://europe-west4-aiplatform.googleapis.com",
    model=PRO,
    stream=True,
    project="proj",
    location="europe-west4",
)
AZURE = chat_request.endpoint(
    "https://r.openai.azure.com", vendor="azure", model="my deploy", api_version="v"
)

BUILT = [
    (anthropic_request.endpoint("https://api.anthropic.com"), "anthropic", None),
    (chat_request.endpoint(OPENAI, vendor="openai", model="m"), "openai", None),
    (chat_request.endpoint(GROQ, vendor="groq", model="m"), "openai", None),
    (AZURE, "azure", "my deploy"),
    (responses_request.endpoint(OPENAI), "openai-responses", None),
    (gemini_request.endpoint(GEMINI, model=PRO, stream=True), "gemini", PRO),
    (gemini_request.endpoint(GEMINI, model=PRO, stream=False), "gemini", PRO),
    (VERTEX, "vertex", PRO),
    (bedrock_request.endpoint(BEDROCK, model=CLAUDE, stream=False), "bedrock", CLAUDE),
    (bedrock_request.endpoint(BEDROCK, model=CLAUDE, stream=True), "bedrock", CLAUDE),
    (cohere_request.endpoint("https://api.cohere.com"), "cohere", None),
    ("http://localhost:11434/api/chat", "ollama", None),
]  # fmt: skip


@pytest.mark.parametrize(("url", "provider", "model"), BUILT, ids=[u for u, _, _ in BUILT])
def test_every_url_a_client_builds_is_recognised_with_its_model(
    url: str, provider: str, model: str | None
) -> None:
    path = urlsplit(url).path
    assert endpoint_for_path(path) == (provider, model)
    # Behind a gateway's or vendor's prefix too.
    assert endpoint_for_path("/openrouter/team-a" + path) == (provider, model)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/models",
        "/v1/embeddings",
        "/v1/messages/count_tokens",
        "/v1/chat/completions/abc",
        "/model/x/converse/extra",
        "/",
    ],
)
def test_a_path_that_is_no_model_call_is_none(path: str) -> None:
    assert endpoint_for_path(path) is None


def test_a_path_names_another_model_where_it_names_one() -> None:
    gemini = urlsplit(gemini_request.endpoint(GEMINI, model="a", stream=True)).path
    assert path_with_model(gemini, "b/c") == gemini.replace("/models/a:", "/models/b%2Fc:")
    bedrock = urlsplit(bedrock_request.endpoint(BEDROCK, model="a", stream=False)).path
    assert path_with_model(bedrock, "b") == "/model/b/converse"
    azure = "/openai/deployments/a/chat/completions"
    assert path_with_model(azure, "b") == "/openai/deployments/b/chat/completions"
    assert path_with_model("/v1/chat/completions", "b") == "/v1/chat/completions"
    assert path_with_model("/v1/embeddings", "b") == "/v1/embeddings"
