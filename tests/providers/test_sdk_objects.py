"""Official SDK response objects, built from our fixtures, give the verdict of the wire JSON.

Each supported SDK's own types parse the fixture (`model_validate`), and `normalize` reads
the object: the finish reason, stop details, content, tool calls and notice must be those
of the same bytes read as JSON. Fixtures an SDK's types reject (fields a newer API added,
which a strict model forbids) are left out of that SDK's list, and the lists must not be
empty. boto3 gives plain dicts: those are built as botocore builds them.

The cohere and ollama SDKs' objects are tested the same way in
`test_sdk_objects_cohere_ollama.py`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusals.model import FinishReason, LLMResponse
from refusals.providers import normalize

from ._support import FIXTURES, agreed


def validating(folders: list[str], build: Callable[[bytes], Any]) -> list[tuple[str, Any]]:
    """(fixture name, SDK object) for every JSON fixture in `folders` the SDK accepts."""
    found = []
    for folder in folders:
        for path in sorted((FIXTURES / folder).glob("*.json")):
            raw = path.read_bytes()
            body = json.loads(raw)
            if not isinstance(body, dict) or _is_error_body(body):
                continue
            try:
                found.append((str(path.relative_to(FIXTURES)), build(raw)))
            except Exception:
                continue
    return found


def _is_error_body(body: dict[str, Any]) -> bool:
    error = body.get("error")
    return body.get("type") == "error" or (error is not None and "output" not in body)


def same_as_wire(name: str, sdk_object: Any, provider: str | None = None) -> LLMResponse:
    wire = normalize((FIXTURES / name).read_bytes(), provider)
    read = normalize(sdk_object, provider)
    assert agreed(read, "provider", "api") == agreed(wire, "provider", "api"), name
    return read


anthropic_types = pytest.importorskip("anthropic.types")
openai_chat_types = pytest.importorskip("openai.types.chat")
openai_responses_types = pytest.importorskip("openai.types.responses")
genai_types = pytest.importorskip("google.genai.types")

ANTHROPIC = validating(
    ["anthropic", "anthropic/written"], anthropic_types.Message.model_validate_json
)
CHAT = validating(
    ["openai-chat", "openai-chat/written", "azure", "azure/written", "openrouter/written"],
    openai_chat_types.ChatCompletion.model_validate_json,
)
# The request fields a Responses object echoes; our written fixtures leave some out.
RESPONSE_ECHOES = {"parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "metadata": {}}


def response_object(raw: bytes) -> Any:
    body = {**RESPONSE_ECHOES, **json.loads(raw)}
    return openai_responses_types.Response.model_validate(body)


RESPONSES = validating(["openai-responses", "openai-responses/written"], response_object)
GEMINI = validating(
    ["gemini", "gemini/written"], genai_types.GenerateContentResponse.model_validate_json
)


def test_every_sdk_accepts_some_of_our_fixtures() -> None:
    assert len(ANTHROPIC) >= 5 and len(CHAT) >= 5 and len(RESPONSES) >= 1 and len(GEMINI) >= 3


def ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in cases]


@pytest.mark.parametrize(("name", "sdk_object"), ANTHROPIC, ids=ids(ANTHROPIC))
def test_anthropic_message_objects_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), CHAT, ids=ids(CHAT))
def test_openai_chat_completion_objects_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), RESPONSES, ids=ids(RESPONSES))
def test_openai_response_objects_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), GEMINI, ids=ids(GEMINI))
def test_google_genai_objects_read_as_the_wire_json(name: str, sdk_object: Any) -> None:
    same_as_wire(name, sdk_object)


@pytest.mark.parametrize(("name", "sdk_object"), GEMINI, ids=ids(GEMINI))
def test_a_google_genai_snake_case_dump_reads_as_the_wire_json(name: str, sdk_object: Any) -> None:
    # What a caller gets from `response.model_dump()` (snake_case keys, nulls, enums).
    same_as_wire(name, sdk_object.model_dump())
    same_as_wire(name, sdk_object.model_dump(mode="json"))


def test_a_google_genai_safety_block_is_a_content_filter_not_an_error() -> None:
    _, sdk_object = next(item for item in GEMINI if "finish-safety-blocked" in item[0])
    response = normalize(sdk_object)
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.provider == "gemini"


def test_google_genai_function_arguments_keep_their_own_keys() -> None:
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "f", "args": {"snake_key": 1}}}],
                },
                "finishReason": "STOP",
            }
        ],
        "modelVersion": "gemini-2.5-flash",
    }
    sdk_object = genai_types.GenerateContentResponse.model_validate(body)
    response = normalize(sdk_object.model_dump())
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert json.loads(response.tool_calls[0].arguments) == {"snake_key": 1}


# --- boto3 --------------------------------------------------------------------------------


def botocore_dict(path: Path) -> dict[str, Any]:
    """A Converse response as boto3 returns it: the JSON body, blobs as bytes, and the
    `ResponseMetadata` botocore adds."""
    body: dict[str, Any] = json.loads(path.read_bytes())
    for block in body.get("output", {}).get("message", {}).get("content", []):
        reasoning = block.get("reasoningContent")
        if isinstance(reasoning, dict) and isinstance(reasoning.get("redactedContent"), str):
            reasoning["redactedContent"] = base64.b64decode(reasoning["redactedContent"])
    body["ResponseMetadata"] = {
        "RequestId": "d1b7e7c2-0000-4000-8000-000000000000",
        "HTTPStatusCode": 200,
        "HTTPHeaders": {"content-type": "application/json"},
        "RetryAttempts": 0,
    }
    return body


BEDROCK = [
    path
    for folder in ("bedrock", "bedrock/written")
    for path in sorted((FIXTURES / folder).glob("*.json"))
    if "output" in json.loads(path.read_bytes())
]


def test_there_are_bedrock_converse_fixtures() -> None:
    assert len(BEDROCK) >= 5


@pytest.mark.parametrize("path", BEDROCK, ids=[p.name for p in BEDROCK])
def test_boto3_converse_dicts_read_as_the_wire_json(path: Path) -> None:
    wire = normalize(path.read_bytes())
    read = normalize(botocore_dict(path))
    assert agreed(read, "provider", "api") == agreed(wire, "provider", "api")
    assert read.request_id == "d1b7e7c2-0000-4000-8000-000000000000"


def test_a_boto3_client_error_response_reads_as_the_error_body() -> None:
    error = {
        "Error": {
            "Code": "ValidationException",
            "Message": "Output blocked by content filtering policy",
        },
        "ResponseMetadata": {"RequestId": "r-1", "HTTPStatusCode": 400, "HTTPHeaders": {}},
    }
    response = normalize(error)
    assert response.provider == "bedrock"
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.error is not None and response.error.status == 400
