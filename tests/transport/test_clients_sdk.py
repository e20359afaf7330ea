"""Our request bodies against what each official SDK sends for the same conversation.

Both go to the mock server on 127.0.0.1; its request log keeps each decoded body, so the
two can be compared field by field. The SDKs build these bodies from their own typed
parameters (google-genai and boto3 translate them to the REST shape themselves).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from refusals.mock import MockServer
from refusals.model import ToolCall
from refusals.request import Message, Request, ToolSpec
from refusals.transport.clients import client_for

from ._mockwire import SENTINEL_KEY, run

SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def conversation(model: str) -> Request:
    return Request(
        model=model,
        system="Be brief.",
        messages=[
            Message("user", "Read the file."),
            Message(
                "assistant",
                "Reading it.",
                tool_calls=[ToolCall("call_1", "read_file", '{"path": "a.txt"}')],
            ),
            Message("tool", "hello", tool_call_id="call_1", name="read_file"),
            Message("user", "Thanks."),
        ],
        tools=[ToolSpec("read_file", "Read a file.", SCHEMA)],
        max_tokens=256,
        temperature=0.2,
        stop=["END"],
    )


def ours(server: MockServer, model: str, base_url: str) -> dict[str, Any]:
    """The body our client sent for the conversation (not streamed)."""
    server.app.reset()
    client = client_for(model, base_url=base_url, api_key=SENTINEL_KEY)
    run(client.complete(conversation(model.partition(":")[2])))
    [recorded] = server.app.requests
    body: dict[str, Any] = recorded.body
    return body


def theirs(server: MockServer) -> dict[str, Any]:
    [recorded] = server.app.requests
    body: dict[str, Any] = recorded.body
    return body


def test_anthropic_sdk_sends_the_body_our_builder_sends(server: MockServer) -> None:
    mine = ours(server, "anthropic:mock-answer", server.base_url)
    server.app.reset()
    sdk = anthropic.Anthropic(
        api_key=SENTINEL_KEY, base_url=server.base_url, max_retries=0, timeout=TIMEOUT
    )
    sdk.messages.create(
        model="mock-answer",
        max_tokens=256,
        system="Be brief.",
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Read the file."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading it."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "read_file",
                        "input": {"path": "a.txt"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "hello"},
                    {"type": "text", "text": "Thanks."},
                ],
            },
        ],
        tools=[{"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}],
        stop_sequences=["END"],
    )
    assert mine == theirs(server)


def test_openai_sdk_sends_the_chat_body_our_builder_sends(server: MockServer) -> None:
    mine = ours(server, "openai:mock-answer", server.base_url + "/v1")
    server.app.reset()
    sdk = openai.OpenAI(
        api_key=SENTINEL_KEY, base_url=server.base_url + "/v1", max_retries=0, timeout=TIMEOUT
    )
    sdk.chat.completions.create(
        model="mock-answer",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Read the file."},
            {
                "role": "assistant",
                "content": "Reading it.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
            {"role": "user", "content": "Thanks."},
        ],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": SCHEMA,
                },
            }
        ],
        max_completion_tokens=256,
        temperature=0.2,
        stop=["END"],
    )
    assert mine == theirs(server)


def test_openai_sdk_sends_the_responses_body_our_builder_sends(server: MockServer) -> None:
    mine = ours(server, "openai-responses:mock-answer", server.base_url + "/v1")
    server.app.reset()
    sdk = openai.OpenAI(
        api_key=SENTINEL_KEY, base_url=server.base_url + "/v1", max_retries=0, timeout=TIMEOUT
    )
    sdk.responses.create(
        model="mock-answer",
        instructions="Be brief.",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": "Read the file."}]},
            {"role": "assistant", "content": "Reading it."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "read_file",
                "arguments": '{"path": "a.txt"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
            {"role": "user", "content": [{"type": "input_text", "text": "Thanks."}]},
        ],
        tools=[
            {
                "type": "function",
                "name": "read_file",
                "description": "Read a file.",
                "parameters": SCHEMA,
                "strict": False,
            }
        ],
        max_output_tokens=256,
        temperature=0.2,
    )
    assert mine == theirs(server)


def test_google_genai_sends_the_body_our_builder_sends(server: MockServer) -> None:
    mine = ours(server, "gemini:mock-answer", server.base_url)
    server.app.reset()
    sdk = genai.Client(
        api_key=SENTINEL_KEY,
        http_options=genai_types.HttpOptions(base_url=server.base_url, timeout=int(TIMEOUT * 1000)),
    )
    sdk.models.generate_content(
        model="mock-answer",
        contents=[
            genai_types.Content(role="user", parts=[genai_types.Part(text="Read the file.")]),
            genai_types.Content(
                role="model",
                parts=[
                    genai_types.Part(text="Reading it."),
                    genai_types.Part(
                        function_call=genai_types.FunctionCall(
                            name="read_file", args={"path": "a.txt"}
                        )
                    ),
                ],
            ),
            genai_types.Content(
                role="user",
                parts=[
                    genai_types.Part(
                        function_response=genai_types.FunctionResponse(
                            name="read_file", response={"result": "hello"}
                        )
                    ),
                    genai_types.Part(text="Thanks."),
                ],
            ),
        ],
        config=genai_types.GenerateContentConfig(
            system_instruction="Be brief.",
            tools=[
                genai_types.Tool(
                    function_declarations=[
                        genai_types.FunctionDeclaration(
                            name="read_file",
                            description="Read a file.",
                            parameters=genai_types.Schema.model_validate(SCHEMA),
                        )
                    ]
                )
            ],
            max_output_tokens=256,
            temperature=0.2,
            stop_sequences=["END"],
            automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
        ),
    )
    sent = theirs(server)
    # The SDK sends the system instruction with a role and JSON-schema types in upper case
    # (its OpenAPI dialect); both forms are accepted by the API.
    assert sent["contents"] == mine["contents"]
    assert sent["generationConfig"] == mine["generationConfig"]
    assert sent["systemInstruction"]["parts"] == mine["systemInstruction"]["parts"]
    [declaration] = sent["tools"][0]["functionDeclarations"]
    [our_declaration] = mine["tools"][0]["functionDeclarations"]
    assert declaration["name"] == our_declaration["name"]
    assert declaration["description"] == our_declaration["description"]
    assert declaration["parameters"]["required"] == ["path"]


def test_boto3_sends_the_converse_body_our_builder_sends(
    server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDMOCKEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL_KEY)
    mine = ours(server, "bedrock:mock-answer", server.base_url)
    server.app.reset()
    sdk = boto3.client(
        "bedrock-runtime",
        endpoint_url=server.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDMOCKEXAMPLE",
        aws_secret_access_key=SENTINEL_KEY,
    )
    sdk.converse(
        modelId="mock-answer",
        system=[{"text": "Be brief."}],
        messages=[
            {"role": "user", "content": [{"text": "Read the file."}]},
            {
                "role": "assistant",
                "content": [
                    {"text": "Reading it."},
                    {
                        "toolUse": {
                            "toolUseId": "call_1",
                            "name": "read_file",
                            "input": {"path": "a.txt"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "call_1",
                            "content": [{"text": "hello"}],
                            "status": "success",
                        }
                    },
                    {"text": "Thanks."},
                ],
            },
        ],
        inferenceConfig={"maxTokens": 256, "temperature": 0.2, "stopSequences": ["END"]},
        toolConfig={
            "tools": [
                {
                    "toolSpec": {
                        "name": "read_file",
                        "description": "Read a file.",
                        "inputSchema": {"json": SCHEMA},
                    }
                }
            ]
        },
    )
    assert mine == theirs(server)
