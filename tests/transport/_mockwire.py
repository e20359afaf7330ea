"""Shared by the client tests: how each wire format of the mock server is reached."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from refusals.mock.wire import WIRES
from refusals.request import Message, Request, ToolSpec

SENTINEL_KEY = "sk-SENTINEL-do-not-leak-7f3a9c2e5b1d"
"""An API key that must appear nowhere: not in output, events, reprs, attempts or errors."""

T = TypeVar("T")

CALL_TIMEOUT_SECONDS = 20.0


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one client call, bounded in time so that no test can hang."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, CALL_TIMEOUT_SECONDS)

    return asyncio.run(bounded())


@dataclass(frozen=True)
class WireCase:
    """A wire format the mock serves: the model-string prefix and base URL that reach it."""

    wire: str
    """The mock's name for the wire format (`RecordedRequest.wire`)."""
    provider: str
    suffix: str = ""
    """Appended to the server root to make the SDK-convention base_url."""
    env: tuple[tuple[str, str], ...] = ()

    def base_url(self, root: str) -> str:
        return root + self.suffix

    def prepare(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Set the environment this provider's client needs, and skip unserved wires."""
        if self.wire not in WIRES:
            pytest.skip(f"the mock server does not serve the {self.wire} wire format yet")
        for name, value in self.env:
            monkeypatch.setenv(name, value)


CASES: tuple[WireCase, ...] = (
    WireCase("anthropic", "anthropic"),
    WireCase("openai-chat", "openai", "/v1"),
    WireCase("openai-responses", "openai-responses", "/v1"),
    WireCase("azure", "azure", env=(("OPENAI_API_VERSION", "2024-10-21"),)),
    WireCase("openrouter", "openrouter", "/openrouter/v1"),
    WireCase("xai", "xai", "/xai/v1"),
    WireCase("groq", "groq", "/groq/openai/v1"),
    WireCase("deepseek", "deepseek", "/deepseek/v1"),
    WireCase("mistral", "mistral", "/mistral/v1"),
    WireCase("gemini", "gemini"),
    WireCase("cohere", "cohere"),
    WireCase("vertex", "vertex", env=(("GOOGLE_CLOUD_PROJECT", "mock-project"),)),
    WireCase(
        "bedrock",
        "bedrock",
        env=(
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDMOCKEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", SENTINEL_KEY),
        ),
    ),
)

SPAWN = ToolSpec(
    "spawn_agent",
    "Start a subagent on a task.",
    {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]},
)


def hello(**fields: Any) -> Request:
    """A one-turn request offering one tool."""
    return Request(model="", messages=[Message("user", "hello there")], tools=[SPAWN], **fields)


class Sleeps:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def key_for(case: WireCase) -> str | None:
    """The api_key argument: Bedrock signs with the environment's AWS keys instead."""
    return None if case.wire == "bedrock" else SENTINEL_KEY


Check = Callable[[str], None]
