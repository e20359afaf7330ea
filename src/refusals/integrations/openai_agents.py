"""OpenAI Agents SDK: record each model call's verdict, and end a refused run with the notice.

The Agents SDK raises `ModelRefusalError` with the refusal text alone, or hands it to a
`model_refusal` error handler. Two pieces fill the gap:

- `RefusalRunHooks`, a `RunHooks` whose `on_llm_end` classifies every model response
  (the Responses-API items the SDK keeps, read by `refusals.normalize`) and records it;
- `notice_on_refusal`, a handler for `Runner.run(..., error_handlers={"model_refusal":
  notice_on_refusal})` that ends the run with the notice as its final output, kept out of
  the conversation history so that no later turn shows the model its own refusal.

The SDK keeps no finish reason, so a content-filter stop (or an Anthropic refusal reached
through LiteLLM) does not show in its responses: put the hooks' transport under the
model's client (`hooks.transport(...)`, a `RefusalTransport` that reports to the hooks).
The hooks then take the transport's verdict for each call, and a blocked answer the SDK
would take as a final output (a content-filtered partial answer) is turned into a
refusal item, so the SDK raises `ModelRefusalError` or calls the `model_refusal` handler,
which ends the run with the content-filter notice. Install with `refusals[openai-agents]`
(the SDK 0.17 or later, which has the `model_refusal` handler).
"""

from __future__ import annotations

import contextlib
import threading
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

from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal

from refusals.integrations.httpx_transport import RefusalTransport, ResponseVerdict
from refusals.model import FinishReason, LLMResponse
from refusals.providers import normalize
from refusals.refusal import notice as notice_of

_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
_VERDICT_ATTRIBUTE = "_refusals_verdict"

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
    With `transport()` under the model's client, each call's verdict is the transport's
    (read from the provider's bytes), and a blocked answer never passes for an output.
    """

    def __init__(self, on_verdict: Callable[[AgentVerdict], None] | None = None) -> None:
        self.verdicts: list[AgentVerdict] = []
        self.on_verdict = on_verdict
        self._wire: list[ResponseVerdict] = []
        self._lock = threading.Lock()

    @property
    def blocked(self) -> list[AgentVerdict]:
        """The refused or filtered calls of the run."""
        return [verdict for verdict in self.verdicts if verdict.blocked]

    def transport(self, inner: Any = None, **options: Any) -> RefusalTransport:
        """A `RefusalTransport` (over `inner`, by default httpx2's or httpx's async
        transport) whose verdicts these hooks read: pass it to the model's client."""
        if inner is None:
            try:
                import httpx2  # noqa: PLC0415 - the SDK's own HTTP library, when present

                inner = httpx2.AsyncHTTPTransport()
            except ImportError:
                import httpx  # noqa: PLC0415

                inner = httpx.AsyncHTTPTransport()
        chained = options.pop("on_verdict", None)

        def observe(verdict: ResponseVerdict) -> None:
            self.observe(verdict)
            if chained is not None:
                chained(verdict)

        return RefusalTransport(inner, on_verdict=observe, **options)

    def observe(self, verdict: ResponseVerdict) -> None:
        """A transport verdict (`RefusalTransport(on_verdict=hooks.observe)`): read by the
        next `on_llm_end`."""
        with self._lock:
            self._wire.append(verdict)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        with self._lock:
            wire, self._wire = self._wire, []
        read = response_of(response)
        # The transport read the provider's own bytes: its verdict has the finish reason
        # the SDK drops. An SDK retry gives several; the last is the answer it kept.
        seen = wire[-1].response if wire else None
        if (
            seen is not None
            and seen.finish_reason in _BLOCKED
            and read.finish_reason not in _BLOCKED
        ):
            _as_refusal(response, seen)
            read = seen
        elif seen is not None and read.finish_reason in _BLOCKED and seen.finish_reason in _BLOCKED:
            read = seen  # the same verdict, with what only the bytes hold (category...)
        verdict = AgentVerdict(agent=agent.name, response=read)
        with contextlib.suppress(AttributeError, TypeError):  # a slotted ModelResponse
            object.__setattr__(response, _VERDICT_ATTRIBUTE, verdict)
        self.verdicts.append(verdict)
        if self.on_verdict is not None:
            self.on_verdict(verdict)


def _as_refusal(response: ModelResponse, blocked: LLMResponse) -> None:
    """Turns a blocked answer the SDK would take as final output into a refusal item.

    The SDK decides a refusal by a refusal part in the last message; the partial text
    (cut off by a filter) is withdrawn, never to be shown or sent back as an answer.
    """
    text = notice_of(blocked) or "The provider blocked this response."
    part = ResponseOutputRefusal(type="refusal", refusal=text)
    messages = [item for item in response.output if isinstance(item, ResponseOutputMessage)]
    if messages:
        # In place: the SDK's processed items hold these same objects.
        messages[-1].content[:] = [part]
        return
    response.output.append(
        ResponseOutputMessage(
            id="msg_refusals_blocked",
            type="message",
            role="assistant",
            status="completed",
            content=[part],
        )
    )


def notice_on_refusal(handler_input: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult:
    """A `model_refusal` error handler: the run ends with the notice as its final output.

    The notice is built from the refused response itself (its refusal text is the
    explanation), so it is the one every other surface shows. It is not added to the
    history: the next turn must not present the refusal as the assistant's answer.
    """
    responses = handler_input.run_data.raw_responses
    recorded = getattr(responses[-1], _VERDICT_ATTRIBUTE, None) if responses else None
    if isinstance(recorded, AgentVerdict) and recorded.notice is not None:
        # The hooks' verdict: a content filter keeps its own notice, not a refusal's.
        return RunErrorHandlerResult(final_output=recorded.notice, include_in_history=False)
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
