"""`--output-schema FILE`: the schema in each wire's own structured-output field, the
answer checked to be JSON, and a structured-output refusal read as a refusal (issue 20)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from refusals.mock import MockApp, MockServer

from ._exec_support import WIRES, exec_on

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_bytes(orjson.dumps(SCHEMA))
    return path


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-schema",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[MockServer]:
    rules = {
        "rules": [
            {
                "prompt_contains": "capital",
                "body": completion({"role": "assistant", "content": '{"city": "Paris"}'}),
            },
            {
                # A model that ignores the schema and answers in prose.
                "prompt_contains": "chat",
                "body": completion({"role": "assistant", "content": "Paris, of course."}),
            },
            {
                # OpenAI's structured-output refusal: no content, a typed `refusal`.
                "prompt_contains": "exploit",
                "body": completion(
                    {"role": "assistant", "content": None, "refusal": "I can't help with that."}
                ),
            },
        ]
    }
    path = tmp_path / "rules.json"
    path.write_bytes(orjson.dumps(rules))
    with MockServer(MockApp(path)) as server:
        yield server


def test_the_schema_goes_as_response_format_and_the_json_answer_is_the_result(
    scripted: MockServer, schema_file: Path
) -> None:
    run = exec_on(
        WIRES["openai"],
        scripted.base_url,
        "answer",
        "--output-schema",
        str(schema_file),
        "--no-stream",
        "The capital of France?",
    )
    assert run.exit_code == 0, run.stderr
    assert orjson.loads(run.events[-1]["result"]) == {"city": "Paris"}
    [request] = scripted.app.requests
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA, "strict": True},
    }


def test_a_structured_output_refusal_is_a_refusal_sent_once(
    scripted: MockServer, schema_file: Path
) -> None:
    run = exec_on(
        WIRES["openai"],
        scripted.base_url,
        "answer",
        "--output-schema",
        str(schema_file),
        "--no-stream",
        "Write an exploit.",
    )
    assert run.exit_code == 3
    refusal = run.one("refusal")
    assert refusal["explanation"] == "I can't help with that."
    assert scripted.app.count() == 1


@pytest.mark.parametrize(
    ("wire", "field"),
    [
        ("anthropic", lambda body: body["output_config"]["format"]["schema"]),
        ("openai-responses", lambda body: body["text"]["format"]["schema"]),
        ("gemini", lambda body: body["generationConfig"]["responseJsonSchema"]),
    ],
)
def test_each_wire_carries_the_schema_and_the_json_answer_is_the_result(
    schema_file: Path, wire: str, field: Any
) -> None:
    with MockServer() as server:
        run = exec_on(
            WIRES[wire], server.base_url, "answer", "--output-schema", str(schema_file), "hi"
        )
        [request] = server.app.requests
    assert field(request.body) == SCHEMA
    # The mock answers JSON following the schema wherever the wire asks for it.
    assert run.exit_code == 0, run.stderr
    assert set(orjson.loads(run.events[-1]["result"])) == {"city"}


def test_prose_is_not_taken_for_json_and_not_retried(
    scripted: MockServer, schema_file: Path
) -> None:
    run = exec_on(
        WIRES["openai"],
        scripted.base_url,
        "answer",
        "--output-schema",
        str(schema_file),
        "--no-stream",
        "Just chat with me.",
    )
    assert run.exit_code == 1
    assert run.one("turn.failed")["error"]["message"] == (
        "the answer is not the JSON --output-schema asks for"
    )
    assert scripted.app.count() == 1


def test_bedrock_has_no_structured_output_and_says_so_before_any_request(
    schema_file: Path,
) -> None:
    with MockServer() as server:
        run = exec_on(
            WIRES["bedrock"],
            server.base_url,
            "answer",
            "--output-schema",
            str(schema_file),
            "hi",
            as_json=False,
        )
        assert server.app.count() == 0
    assert run.exit_code == 2
    assert "has no structured output (Bedrock Converse)" in run.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"{not json", "is not JSON"), (b"[1, 2]", "must hold a JSON Schema object")],
)
def test_a_bad_schema_file_is_a_usage_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "schema.json"
    path.write_bytes(content)
    with MockServer() as server:
        run = exec_on(
            WIRES["anthropic"],
            server.base_url,
            "answer",
            "--output-schema",
            str(path),
            "hi",
            as_json=False,
        )
        assert server.app.count() == 0
    assert run.exit_code == 2
    assert f"--output-schema: {path} {message}" in run.stderr
