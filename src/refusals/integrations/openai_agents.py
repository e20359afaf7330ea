"""OpenAI Agents SDK: record each model call's verdict, and end a refused run with the notice.

The Agents SDK raises `ModelRefusalError` with the refusal text alone, or hands it to a
`model_refusal` error handler. Two pieces fill the gap:

- `RefusalRunHooks`, a `RunHooks` whose `on_llm_end` classifies every model response
  (the Responses-API items the SDK keeps, read by `refusals.normalize`) and records it;
- `notice_on_refusal`, a handler for `Runner.run(..., error_handlers={"model_refusal":
  notice_on_refusal})` that ends the run with the notice as its final output, kept out of
  the conversation history so that no later turn shows the model its own refusal.

The SDK keeps no finish reason, so a content-filter stop (or an Anthropic refusal reached
through LiteLLM) does not show in its responses: put a `RefusalTransport` under the
model's client to classify those and to guard against resending them. Install with
`refusals[openai-agents]` (the SDK 0.17 or later, which has the `model_refusal` handler).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from agents import (
        Agent,
        ModelRefusalError,
        ModelResponse,
        RunContextWrapper,
        RunErrorHandlerInput,
        RunErrorHandlerResult,
        RunErrorHandlers,
        RunHooks,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "refusals.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'refusals[openai-agents]'"
    ) from exc

from refusals.model import FinishReason, LLMResponse
from refusals.providers import normalize
from refusals.refusal import notice as notice_of

__all__ = [
    "AgentVerdict",
    "RefusalRunHooks",
    "error_handlers",
    "notice_on_refusal",
    "response_of",
]


def response_of(model_response: ModelResponse) -> LLMResponse:
    """An Agents SDK `ModelResponse` as an `LLMResponse` (its items read as a Responses body).

    A refusal part in a message makes it a refusal, whatever model produced it.
    """
    items = [
        item.model_dump(mode="json", exclude_none=True) if hasattr(item, "model_dump") else item
        for item in model_response.output
    ]
    body = {
        "object": "response",
        "id": model_response.response_id or "",
        "status": "completed",
        "output": items,
    }
    response = normalize(body, provider="openai-responses")
    response.request_id = model_response.request_id or response.request_id
    return response


@dataclass(frozen=True, slots=True)
class AgentVerdict:
    """One model call of a run: which agent made it, and how it ended."""

    agent: str
    response: LLMResponse

    @property
    def finish_reason(self) -> FinishReason:
        return self.response.finish_reason

    @property
    def blocked(self) -> bool:
        """Refused or filtered: terminal for the prompt that caused it."""
        return self.response.finish_reason in (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)

    @property
    def notice(self) -> str | None:
        return notice_of(self.response)


class RefusalRunHooks(RunHooks[Any]):
    """Run hooks that classify every model response of a run, in order, in `verdicts`.

    `on_verdict` (optional) is called with each `AgentVerdict` as it is recorded. Other
    hooks can be layered by subclassing; call `super().on_llm_end(...)` to keep this one.
    """

    def __init__(self, on_verdict: Callable[[AgentVerdict], None] | None = None) -> None:
        self.verdicts: list[AgentVerdict] = []
        self.on_verdict = on_verdict

    @property
    def blocked(self) -> list[AgentVerdict]:
        """The refused or filtered calls of the run."""
        return [verdict for verdict in self.verdicts if verdict.blocked]

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        verdict = AgentVerdict(agent=agent.name, response=response_of(response))
        self.verdicts.append(verdict)
        if self.on_verdict is not None:
            self.on_verdict(verdict)


def notice_on_refusal(handler_input: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
    """A `model_refusal` error handler: the run ends with the notice as its final output.

    The notice is built from the refused response itself (its refusal text is the
    explanation), so it is the one every other surface shows. It is not added to the
    history: the next turn must not present the refusal as the assistant's answer.
    """
    responses = handler_input.run_data.raw_responses
    text = notice_of(response_of(responses[-1])) if responses else None
    if text is None:
        # The SDK saw a refusal that our reader did not: build the notice from its text.
        error = handler_input.error
        refusal = error.refusal if isinstance(error, ModelRefusalError) else None
        text = notice_of(LLMResponse(content=refusal, finish_reason=FinishReason.REFUSAL))
    return RunErrorHandlerResult(final_output=text, include_in_history=False)


def error_handlers() -> RunErrorHandlers[Any]:
    """`Runner.run(..., error_handlers=error_handlers())`: the notice on a refusal."""
    return {"model_refusal": notice_on_refusal}
