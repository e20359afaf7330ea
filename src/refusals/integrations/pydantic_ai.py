"""pydantic-ai: a capability that stops a run on a refusal, and a fallback trigger.

pydantic-ai maps a refusal to `finish_reason='content_filter'` and keeps the provider's
facts in `provider_details` (`finish_reason`, `refusal`, `refusal_category`);
`FallbackModel` accepts a 200-OK refusal as an answer unless a response handler says
otherwise. This module reads those facts back into an `LLMResponse`, where refusal and
content filter are distinct, and offers:

- `RaiseOnRefusal`, a capability whose `after_model_request` raises `RefusalError` or
  `ContentFilteredError` (typed, carrying the notice, the finish reason, the category and
  the explanation) instead of letting the run treat the response as an answer;
- `fallback_on_refusal`, a response handler for `FallbackModel(fallback_on=...)` so that a
  refused or filtered response moves on to the next model, which is asked once.

Install with `refusals[pydantic-ai]` (pydantic-ai 2, which has capabilities).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass
from typing import Any

try:
    from pydantic_ai import ModelRequestContext, RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ContentFilterError, FallbackExceptionGroup, ModelHTTPError
    from pydantic_ai.messages import ModelResponse, TextPart
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "refusals.integrations.pydantic_ai needs pydantic-ai: pip install 'refusals[pydantic-ai]'"
    ) from exc

from refusals.model import FinishReason, LLMResponse
from refusals.providers import PROVIDERS, NormalizeError, normalize
from refusals.refusal import notice as notice_of

__all__ = [
    "BlockedResponseError",
    "ContentFilteredError",
    "RaiseOnRefusal",
    "RefusalError",
    "fallback_on_refusal",
    "response_of",
]

# pydantic-ai's own finish reasons, for providers whose raw value we cannot re-read.
_FINISH: dict[str | None, FinishReason] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "tool_call": FinishReason.TOOL_CALLS,
    "error": FinishReason.ERROR,
    None: FinishReason.STOP,
}


def _text(details: dict[str, Any], name: str) -> str | None:
    value = details.get(name)
    return value if isinstance(value, str) else None


def response_of(model_response: ModelResponse) -> LLMResponse:
    """A pydantic-ai `ModelResponse` as an `LLMResponse`, refusal and filter told apart.

    Anthropic and OpenAI responses are rebuilt in their wire shape from the facts
    pydantic-ai keeps and read by `refusals.normalize`, so the notice is the one the wire
    response gives; other providers keep pydantic-ai's finish reason and raw value.
    """
    details = model_response.provider_details or {}
    raw = _text(details, "finish_reason")
    refusal = _text(details, "refusal")
    text = "".join(part.content for part in model_response.parts if isinstance(part, TextPart))
    model = model_response.model_name or ""
    provider = model_response.provider_name
    if provider == "anthropic":
        body: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": raw,
        }
        category = _text(details, "refusal_category")
        if raw == "refusal" and (refusal is not None or category is not None):
            stop = {"type": "refusal", "category": category, "explanation": refusal}
            body["stop_details"] = {k: v for k, v in stop.items() if v is not None}
        response = normalize(body, provider="anthropic")
    elif refusal is not None:
        # OpenAI (Chat or Responses): the refusal text is the model's own explanation.
        message = {"role": "assistant", "content": text or None, "refusal": refusal}
        choice = {"index": 0, "finish_reason": raw or "stop", "message": message}
        body = {"object": "chat.completion", "model": model, "choices": [choice]}
        response = normalize(body, provider="openai")
    else:
        response = LLMResponse(
            content=text or None,
            finish_reason=_FINISH.get(model_response.finish_reason, FinishReason.ERROR),
            raw_finish_reason=raw,
            model=model or None,
            provider=provider,
        )
    response.provider = provider or response.provider
    response.request_id = model_response.provider_response_id or response.request_id
    return response


class BlockedResponseError(ContentFilterError):
    """A model response was refused or filtered; terminal for the prompt that caused it.

    Carries the `response` (an `LLMResponse`), its `finish_reason`, the provider's
    `category` and `explanation`, and the `notice`, which is also the message. A
    `ContentFilterError`, so code and `fallback_on` settings that name pydantic-ai's
    error keep working.
    """

    def __init__(self, response: LLMResponse) -> None:
        self.response = response
        self.finish_reason = response.finish_reason
        stop = response.stop_details
        self.category: str | None = stop.category if stop is not None else None
        self.explanation: str | None = stop.explanation if stop is not None else None
        self.notice: str = notice_of(response) or ""
        super().__init__(self.notice)


class RefusalError(BlockedResponseError):
    """The model declined the request."""


class ContentFilteredError(BlockedResponseError):
    """A provider's content filter blocked the input or the output."""


def _blocked_error(response: LLMResponse) -> BlockedResponseError | None:
    if response.finish_reason is FinishReason.REFUSAL:
        return RefusalError(response)
    if response.finish_reason is FinishReason.CONTENT_FILTER:
        return ContentFilteredError(response)
    return None


@dataclass
class RaiseOnRefusal(AbstractCapability[Any]):
    """Raises `RefusalError` or `ContentFilteredError` after a refused or filtered response.

    `on_verdict` (optional) sees every response's `LLMResponse` first, refused or not.
    With a `FallbackModel`, the response handler `fallback_on_refusal` runs before this
    hook; this one ends the run only when the last model refused too.
    """

    _: KW_ONLY
    on_verdict: Callable[[LLMResponse], None] | None = None
    id: str | None = "refusals_raise_on_refusal"

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        verdict = response_of(response)
        if self.on_verdict is not None:
            self.on_verdict(verdict)
        error = _blocked_error(verdict)
        if error is not None:
            raise error
        return response

    async def on_model_request_error(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        error: Exception,
    ) -> ModelResponse:
        """A policy block sent as an HTTP error (Anthropic's 400, OpenAI's
        `invalid_prompt`), or a `FallbackModel` whose every model refused: the typed error
        with the notice, instead of pydantic-ai's generic one."""
        blocked = _blocked_by(error, request_context)
        if blocked is not None:
            if self.on_verdict is not None:
                self.on_verdict(blocked)
            typed = _blocked_error(blocked)
            if typed is not None:
                raise typed from error
        raise error


# The last response `fallback_on_refusal` turned down in this context: when every model
# of a FallbackModel refused, pydantic-ai's exception group keeps none of them.
_REJECTED: ContextVar[LLMResponse | None] = ContextVar("refusals_rejected", default=None)


def _blocked_by(error: BaseException, request_context: ModelRequestContext) -> LLMResponse | None:
    """The refusal or filter an error of a model request stands for, if it is one."""
    if isinstance(error, FallbackExceptionGroup):
        found = [_blocked_by(inner, request_context) for inner in error.exceptions]
        blocked = [f for f in found if f is not None]
        if blocked:
            return blocked[-1]
        rejected = _REJECTED.get()
        _REJECTED.set(None)
        return rejected
    if not isinstance(error, ModelHTTPError) or error.status_code < 400:
        return None
    cause = error.__cause__
    try:
        if cause is not None:
            # The SDK's own exception: the provider's body, status and headers as sent.
            response = normalize(cause)
        else:
            body = error.body
            if isinstance(body, dict) and "error" not in body and "message" in body:
                body = {"error": body}  # the OpenAI SDK keeps only the `error` member
            system = getattr(request_context.model, "system", None)
            provider = system if system in PROVIDERS else None
            response = normalize(body, provider, status=error.status_code)
    except (NormalizeError, TypeError):
        return None
    return response if response.finish_reason in _BLOCKED else None


_BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)


def fallback_on_refusal(response: ModelResponse) -> bool:
    """A `FallbackModel` response handler: move on when the response was refused or filtered.

    `FallbackModel(primary, backup, fallback_on=[ModelAPIError, fallback_on_refusal])`
    sends the refused prompt to `backup` once and never again to `primary`.
    """
    read = response_of(response)
    if read.finish_reason in _BLOCKED:
        _REJECTED.set(read)
        return True
    return False
