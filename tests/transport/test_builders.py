"""Request builders: one conversation, each wire format's body, checked against the SDKs."""

from __future__ import annotations

from typing import Any

import botocore.session
import cohere
import pytest
from anthropic.types import message_create_params as anthropic_params
from anthropic.types.beta import message_create_params as beta_params
from botocore.validate import ParamValidator
from google.genai import types as genai_types
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from pydantic import TypeAdapter

from refusals.model import ToolCall
from refusals.providers.anthropic import request as anthropic_request
from refusals.providers.bedrock import request as bedrock_request
from refusals.providers.cohere import request as cohere_request
from refusals.providers.gemini import request as gemini_request
from refusals.providers.openai_chat import request as chat_request
from refusals.providers.openai_responses import request as responses_request
from refusals.request import Message, Request, ToolSpec

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def conversation(**overrides: Any) -> Request:
    """A user turn, an assistant tool call, its result, and a second user turn."""
    fields: dict[str, Any] = {
        "model": "some-model",
        "system": "Be brief.",
        "messages": [
            Message("user", "Read the file."),
            Message(
                "assistant",
                "Reading it.",
                tool_calls=[ToolCall("call_1", "read_file", '{"path": "a.txt"}')],
            ),
            Message("tool", "hello", tool_call_id="call_1", name="read_file"),
            Message("user", "Thanks."),
        ],
        "tools": [ToolSpec("read_file", "Read a file.", SCHEMA)],
        "max_tokens": 256,
        "temperature": 0.2,
        "stop": ["END"],
    }
    fields.update(overrides)
    return Request(**fields)


def validated(adapter: TypeAdapter[Any], body: dict[str, Any]) -> dict[str, Any]:
    """Validate a TypedDict body, forcing the lazy validation of its iterables."""
    result: dict[str, Any] = adapter.validate_python(body)
    return {k: list(v) if k in ("messages", "tools", "input") else v for k, v in result.items()}


# --- Anthropic -------------------------------------------------------------------------


def test_anthropic_body_has_alternating_turns_with_tool_use_and_tool_result_blocks() -> None:
    built = anthropic_request.messages_body(conversation(), stream=True)
    assert built.betas == []
    assert built.body == {
        "model": "some-model",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [
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
        "tools": [{"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}],
        "stop_sequences": ["END"],
        "stream": True,
    }


def test_anthropic_body_validates_against_the_sdk_request_types() -> None:
    adapter = TypeAdapter(anthropic_params.MessageCreateParamsStreaming)
    result = validated(adapter, anthropic_request.messages_body(conversation(), stream=True).body)
    assert len(result["messages"]) == 3
    assert len(result["tools"]) == 1


def test_anthropic_server_side_fallbacks_are_sent_with_their_beta() -> None:
    built = anthropic_request.messages_body(
        conversation(fallbacks=["claude-opus-4-8"]), stream=False
    )
    assert built.body["fallbacks"] == [{"model": "claude-opus-4-8"}]
    assert built.betas == [anthropic_request.SERVER_SIDE_FALLBACK_BETA]
    assert "stream" not in built.body
    adapter = TypeAdapter(beta_params.MessageCreateParamsNonStreaming)
    assert list(validated(adapter, built.body)["fallbacks"]) == [{"model": "claude-opus-4-8"}]


def test_a_credit_token_is_sent_with_its_beta_but_never_together_with_fallbacks() -> None:
    alone = anthropic_request.messages_body(conversation(fallback_credit_token="tok"), stream=True)
    assert alone.body["fallback_credit_token"] == "tok"
    assert alone.betas == [anthropic_request.FALLBACK_CREDIT_BETA]
    both = anthropic_request.messages_body(
        conversation(fallback_credit_token="tok", fallbacks=["m2"]), stream=True
    )
    assert "fallback_credit_token" not in both.body
    assert both.betas == [anthropic_request.SERVER_SIDE_FALLBACK_BETA]


def test_a_final_assistant_prefill_loses_its_trailing_whitespace() -> None:
    request = Request(
        model="m", messages=[Message("user", "hi"), Message("assistant", "Partial text  \n")]
    )
    body = anthropic_request.messages_body(request, stream=True).body
    assert body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Partial text"}],
    }
    assert body["max_tokens"] == anthropic_request.DEFAULT_MAX_TOKENS


def test_anthropic_gets_no_temperature_which_its_current_api_does_not_take() -> None:
    assert "temperature" not in anthropic_request.messages_body(conversation(), stream=True).body
    older = anthropic_request.messages_body(conversation(extra={"temperature": 0.2}), stream=True)
    assert older.body["temperature"] == 0.2


def test_extra_options_are_merged_last() -> None:
    body = anthropic_request.messages_body(
        conversation(extra={"top_k": 5, "max_tokens": 9}), stream=True
    )
    assert body.body["top_k"] == 5
    assert body.body["max_tokens"] == 9


# --- OpenAI Chat Completions ----------------------------------------------------------


def test_openai_chat_body_has_system_tool_calls_and_tool_messages() -> None:
    body = chat_request.chat_body(conversation(), stream=True)
    assert body == {
        "model": "some-model",
        "messages": [
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
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": SCHEMA,
                },
            }
        ],
        "max_completion_tokens": 256,
        "temperature": 0.2,
        "stop": ["END"],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_openai_chat_body_validates_against_the_sdk_request_types() -> None:
    adapter = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)
    result = validated(adapter, chat_request.chat_body(conversation(), stream=True))
    assert len(result["messages"]) == 5


@pytest.mark.parametrize(
    ("vendor", "key", "stream_options"),
    [
        ("openai", "max_completion_tokens", True),
        ("azure", "max_completion_tokens", True),
        ("groq", "max_tokens", True),
        ("mistral", "max_tokens", False),
    ],
)
def test_vendors_get_the_token_limit_field_and_stream_options_they_document(
    vendor: str, key: str, stream_options: bool
) -> None:
    body = chat_request.chat_body(conversation(), stream=True, vendor=vendor)
    assert body[key] == 256
    assert ("stream_options" in body) is stream_options


# --- OpenAI Responses -----------------------------------------------------------------


def test_responses_body_has_instructions_input_items_and_flat_tools() -> None:
    body = responses_request.responses_body(conversation(), stream=True)
    assert body == {
        "model": "some-model",
        "instructions": "Be brief.",
        "input": [
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
        "tools": [
            {
                "type": "function",
                "name": "read_file",
                "description": "Read a file.",
                "parameters": SCHEMA,
                "strict": False,
            }
        ],
        "max_output_tokens": 256,
        "temperature": 0.2,
        "stream": True,
    }


def test_responses_body_validates_against_the_sdk_request_types() -> None:
    adapter = TypeAdapter(response_create_params.ResponseCreateParamsStreaming)
    result = validated(adapter, responses_request.responses_body(conversation(), stream=True))
    assert len(result["input"]) == 5


# --- Gemini ---------------------------------------------------------------------------


def test_gemini_body_has_contents_system_instruction_tools_and_config() -> None:
    body = gemini_request.generate_body(conversation())
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Read the file."}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Reading it."},
                    {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"result": "hello"}}},
                    {"text": "Thanks."},
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "read_file", "description": "Read a file.", "parameters": SCHEMA}
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 256, "temperature": 0.2, "stopSequences": ["END"]},
    }


def test_gemini_body_parts_validate_against_the_google_genai_models() -> None:
    body = gemini_request.generate_body(conversation())
    contents = [genai_types.Content.model_validate(c) for c in body["contents"]]
    assert contents[1].parts is not None
    call = contents[1].parts[1].function_call
    assert call is not None
    assert call.args == {"path": "a.txt"}
    tool = genai_types.Tool.model_validate(body["tools"][0])
    assert tool.function_declarations is not None
    config = genai_types.GenerationConfig.model_validate(body["generationConfig"])
    assert config.max_output_tokens == 256


# --- Bedrock --------------------------------------------------------------------------


def test_bedrock_body_has_tool_config_and_tool_results() -> None:
    body = bedrock_request.converse_body(conversation())
    assert body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "inputSchema": {"json": SCHEMA},
                }
            }
        ]
    }
    assert body["messages"][2]["content"][0] == {
        "toolResult": {"toolUseId": "call_1", "content": [{"text": "hello"}], "status": "success"}
    }
    assert body["inferenceConfig"] == {
        "maxTokens": 256,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }
    assert body["system"] == [{"text": "Be brief."}]


@pytest.mark.parametrize("operation", ["Converse", "ConverseStream"])
def test_bedrock_body_passes_botocore_parameter_validation(operation: str) -> None:
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model(operation).input_shape
    report = ParamValidator().validate(
        {"modelId": "m", **bedrock_request.converse_body(conversation())}, shape
    )
    assert not report.has_errors(), report.generate_report()


# --- Cohere ----------------------------------------------------------------------------


def test_cohere_body_has_system_tool_calls_tool_results_and_its_own_option_names() -> None:
    body = cohere_request.chat_body(
        conversation(output_schema=SCHEMA, extra={"safety_mode": "STRICT"}), stream=True
    )
    assert body == {
        "model": "some-model",
        "messages": [
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
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": SCHEMA,
                },
            }
        ],
        "max_tokens": 256,
        "temperature": 0.2,
        "stop_sequences": ["END"],
        "response_format": {"type": "json_object", "json_schema": SCHEMA},
        "stream": True,
        "safety_mode": "STRICT",
    }
    assert cohere_request.endpoint("https://api.cohere.com") == "https://api.cohere.com/v2/chat"


def test_cohere_body_validates_against_the_sdk_types() -> None:
    quiet = conversation(
        messages=[Message("user", "hi"), Message("assistant", "", tool_calls=[])],
        output_schema=SCHEMA,
    )
    for request in (conversation(output_schema=SCHEMA), quiet):
        body = cohere_request.chat_body(request, stream=False)
        messages = TypeAdapter(list[cohere.ChatMessageV2]).validate_python(body["messages"])
        # The SDK's models keep unknown keys: what they dump is what was sent, so a key
        # it does not know would show up as a difference in type, not go unnoticed.
        dumped = [m.model_dump(exclude_none=True) for m in messages]
        assert dumped == body["messages"]
        assert [type(m).__name__ for m in messages][:2] == [
            "SystemChatMessageV2",
            "UserChatMessageV2",
        ]
        tools = TypeAdapter(list[cohere.ToolV2]).validate_python(body.get("tools", []))
        assert [t.model_dump(exclude_none=True) for t in tools] == body.get("tools", [])
        fmt = TypeAdapter(cohere.ResponseFormatV2).validate_python(body["response_format"])
        assert type(fmt).__name__ == "JsonObjectResponseFormatV2"


def test_a_cut_off_tool_call_is_sent_with_empty_arguments_not_invalid_json() -> None:
    request = Request(
        model="m",
        messages=[
            Message("user", "go"),
            Message("assistant", "", tool_calls=[ToolCall("c", "t", '{"path": "a')]),
        ],
    )
    assert anthropic_request.messages_body(request, stream=True).body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c", "name": "t", "input": {}}
    ]
