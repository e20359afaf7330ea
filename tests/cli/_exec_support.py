"""Running `refusals exec` against a real mock server, and the wire formats it serves."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner, Result
from jsonschema import Draft202012Validator

from refusals.cli import main

SCHEMA_PATH = Path(__file__).parents[2] / "docs" / "exec-events.schema.json"
VALIDATOR = Draft202012Validator(json.loads(SCHEMA_PATH.read_text("utf-8")))


@dataclass(frozen=True)
class Wire:
    """How `refusals exec` reaches one of the mock's wire formats."""

    provider: str
    path: str
    """What follows the server's root in `--base-url` (the SDKs' convention)."""
    env: tuple[tuple[str, str], ...]
    wire: str
    """The wire name the mock's request log gives."""

    def model(self, scenario: str) -> str:
        return f"{self.provider}:mock-{scenario}"

    def base_url(self, root: str) -> str:
        return root + self.path


def _key(name: str) -> tuple[tuple[str, str], ...]:
    return ((name, "test-key-h5"),)


WIRES = {
    "anthropic": Wire("anthropic", "", _key("ANTHROPIC_API_KEY"), "anthropic"),
    "openai": Wire("openai", "/v1", _key("OPENAI_API_KEY"), "openai-chat"),
    "azure": Wire("azure", "", _key("AZURE_OPENAI_API_KEY"), "azure"),
    "openrouter": Wire("openrouter", "/openrouter/v1", _key("OPENROUTER_API_KEY"), "openrouter"),
    "xai": Wire("xai", "/xai/v1", _key("XAI_API_KEY"), "xai"),
    "groq": Wire("groq", "/groq/openai/v1", _key("GROQ_API_KEY"), "groq"),
    "deepseek": Wire("deepseek", "/deepseek/v1", _key("DEEPSEEK_API_KEY"), "deepseek"),
    "mistral": Wire("mistral", "/mistral/v1", _key("MISTRAL_API_KEY"), "mistral"),
    "openai-responses": Wire("openai-responses", "/v1", _key("OPENAI_API_KEY"), "openai-responses"),
    "gemini": Wire("gemini", "", _key("GEMINI_API_KEY"), "gemini"),
    "cohere": Wire("cohere", "", _key("CO_API_KEY"), "cohere"),
    "vertex": Wire(
        "vertex",
        "",
        (("GOOGLE_OAUTH_ACCESS_TOKEN", "test-key-h5"), ("GOOGLE_CLOUD_PROJECT", "demo")),
        "vertex",
    ),
    "bedrock": Wire(
        "bedrock",
        "",
        (("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "test-key-h5")),
        "bedrock",
    ),
}


@dataclass
class ExecRun:
    exit_code: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == kind]

    def items(self, item_type: str) -> list[dict[str, Any]]:
        """The completed items of one type, in order."""
        done = self.of_type("item.completed")
        return [event["item"] for event in done if event["item"]["type"] == item_type]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.of_type(kind)
        assert len(found) == 1, (kind, self.events)
        return found[0]


def run_exec(
    *args: str,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    as_json: bool = True,
) -> ExecRun:
    """`refusals exec ARGS` in-process; with `as_json`, every line parsed and validated."""
    argv = ["exec", *(["--json"] if as_json else []), *args]
    result: Result = CliRunner().invoke(main, argv, env=env, input=input, catch_exceptions=False)
    events = []
    if as_json:
        for line in result.stdout.splitlines():
            event = orjson.loads(line)
            VALIDATOR.validate(event)
            events.append(event)
    return ExecRun(result.exit_code, result.stdout, result.stderr, events)


def exec_on(wire: Wire, root: str, scenario: str, *args: str, as_json: bool = True) -> ExecRun:
    return run_exec(
        "--model",
        wire.model(scenario),
        "--base-url",
        wire.base_url(root),
        *args,
        env={**dict(wire.env), "AWS_REGION": "us-east-1"},
        as_json=as_json,
    )
