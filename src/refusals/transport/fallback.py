"""The one fallback policy: what happens when a model declines, server-side or client-side.

Two kinds, both reported in the response as `fallback` reasoning details (from, to, the
trigger's type and category), so that `refusals.notice` says "The configured fallback
model also declined." exactly when a fallback ran and declined too:

- Server-side (Anthropic): `Request.fallbacks` is sent as the body's `fallbacks` with
  its beta header (`refusals.providers.anthropic.request`); the API tries them in one round trip
  and its `fallback` blocks and `fallback_message` iterations are kept as they came.
- Client-side (`FallbackChain`, opt-in): on a refusal or a content-filter stop, the same
  request goes once to the next model of the chain, which may be another provider.
  Never the same model twice in one call, at most `max_hops` hops. A refusal naming a
  `recommended_model` (Anthropic: the server could not run its fallback) goes to that
  model first, on the same provider. An Anthropic `fallback_credit_token` is redeemed
  on an Anthropic hop of the same endpoint; the refused partial output is resent as an
  assistant prefill only when the refusal's `fallback_has_prefill_claim` is true, with
  trailing whitespace stripped, and never for requests that force a tool or set an
  output format (the documentation allows the prefill form only then). A hop whose
  request fails (auth, transport) is skipped: the refusal is what the caller gets.

`scope="turn"` returns to the primary at `begin_turn()`; `scope="session"` stays on the
model that last answered. Either way, calls within a turn stay on the model that
answered, so a tool loop is not sent back to a model that declined it.

Streams: a declined hop's events are yielded up to its verdict; that verdict is held
back when another model will be asked, and a `FallbackSeam` marks where the next
model's output begins (text before the seam belongs to the model that declined, unless
the seam's detail says `prefill`: then the next model continues it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from refusals.events import FallbackSeam, StreamEvent, Verdict
from refusals.model import Fallback, FinishReason, LLMResponse, StopDetails
from refusals.providers.anthropic.request import FALLBACK_CREDIT_BETA
from refusals.refusal import refusal_explanation
from refusals.request import Message, Request
from refusals.transport.base import (
    Attempt,
    ModelClient,
    ModelStream,
    SyncClient,
    report_fallback,
    shows_output,
)

__all__ = ["BlockPolicy", "FallbackChain", "Rule", "hop_detail", "hop_request"]

Scope = Literal["turn", "session"]
Action = Literal["stop", "fallback", "ask"]


@dataclass(frozen=True, slots=True)
class Rule:
    """What to do when a model declines: `stop` (report it), `fallback` (ask `model`, or
    the chain's next model when None), or `ask` (the same, once the user says yes)."""

    action: Action
    model: str | None = None


FALLBACK = Rule("fallback")
"""The rule without a policy: the chain's next model."""

Confirm = Callable[[LLMResponse, str], Awaitable[bool]]
"""Asked before an `ask` rule's hop: the declined response and the model to ask next."""


@dataclass(frozen=True, slots=True)
class BlockPolicy:
    """A rule per category (`cyber`, `violence`…), per kind (`refusal`,
    `content_filter`) and a `default`, looked up in that order."""

    rules: Mapping[str, Rule]

    def rule_for(self, finish: FinishReason, stop: StopDetails | None) -> Rule:
        categories = [stop.category, *stop.categories] if stop is not None else []
        for category in categories:
            if category:
                rule = self.rules.get(category.strip().lower())
                if rule is not None:
                    return rule
        kind = "refusal" if finish is FinishReason.REFUSAL else "content_filter"
        return self.rules.get(kind) or self.rules.get("default") or FALLBACK

    @property
    def models(self) -> list[str]:
        """The models the rules name, in order, each once."""
        named: list[str] = []
        for rule in self.rules.values():
            if rule.model is not None and rule.model not in named:
                named.append(rule.model)
        return named


_BLOCKED = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})


def _is_blocked(response: LLMResponse) -> bool:
    return response.finish_reason in _BLOCKED


def _wire(client: ModelClient) -> str | None:
    wire = getattr(client, "wire", None)
    return wire if isinstance(wire, str) else None


def _identity(client: ModelClient) -> str:
    """Which model a client really asks: the wire, the server and the model name sent,
    so that `mock:refusal` and `mock:mock-refusal`, or one name in two spellings, count
    as one model (never asked twice in one call)."""
    wire_name = getattr(client, "wire_name", None)
    base_url = getattr(client, "base_url", None)
    if isinstance(wire_name, str) and isinstance(base_url, str):
        return f"{_wire(client)}|{base_url.rstrip('/').lower()}|{wire_name.strip().lower()}"
    return client.model


def _same_platform(a: ModelClient, b: ModelClient) -> bool:
    """Whether a credit token minted by `a` can be redeemed on `b` (Anthropic, one host)."""
    return (
        _wire(a) == "anthropic"
        and _wire(b) == "anthropic"
        and getattr(a, "base_url", None) == getattr(b, "base_url", None)
    )


def _forces_tool_or_format(request: Request) -> bool:
    """Whether the request forces a tool or sets an output format (no prefill then)."""
    choice = request.extra.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return True
    config = request.extra.get("output_config")
    has_format = isinstance(config, dict) and config.get("format") is not None
    return has_format or request.extra.get("output_format") is not None


def _category(response: LLMResponse) -> str | None:
    stop = response.stop_details
    if stop is None:
        return None
    if stop.category is not None:
        return stop.category
    return stop.categories[0] if stop.categories else None


def hop_detail(
    from_model: str,
    to_model: str,
    blocked: LLMResponse,
    *,
    prefill: bool = False,
    failed: LLMResponse | None = None,
) -> str:
    """The `fallback` reasoning detail that records one client-side hop.

    A hop whose request `failed` (auth, transport) is a `fallback_failed` detail with
    the error's message: a fact for the surfaces that report hops, which the notice
    does not read (the fallback never ran, so it did not "also decline").
    """
    trigger: dict[str, Any] = {
        "type": "refusal" if blocked.finish_reason is FinishReason.REFUSAL else "content_filter",
        "category": _category(blocked),
    }
    explanation = refusal_explanation(blocked)
    if explanation is not None:
        trigger["explanation"] = explanation
    detail: dict[str, Any] = {
        "type": "fallback" if failed is None else "fallback_failed",
        "from": {"model": from_model},
        "to": {"model": to_model},
        "trigger": trigger,
        "source": "client",
    }
    if prefill:
        detail["prefill"] = True
    if blocked.request_id is not None:
        detail["request_id"] = blocked.request_id
    if failed is not None:
        error = failed.error
        detail["error"] = (error.message if error is not None else None) or "the request failed"
    else:
        # The declined call's tokens: the response the caller gets is the last hop's,
        # whose usage does not count them.
        usage = blocked.usage
        if usage is not None:
            detail["usage"] = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_creation_tokens": usage.cache_creation_tokens,
            }
    return orjson.dumps(detail).decode()


def hop_request(
    request: Request, blocked: LLMResponse, source: ModelClient, target: ModelClient
) -> tuple[Request, str | None]:
    """The request for the next hop, and the prefill it carries (None without one).

    Server-side `fallbacks` belong to the primary and are not sent on. A credit token
    goes only to an Anthropic hop of the same endpoint; the partial output only when
    the refusal granted a prefill claim.
    """
    hop = request.with_model(request.model)
    hop.fallbacks = []
    hop.fallback_credit_token = None
    stop = blocked.stop_details
    token = stop.fallback_credit_token if stop is not None else None
    prefill: str | None = None
    if token and _same_platform(source, target):
        hop.fallback_credit_token = token
        partial = (blocked.content or "").rstrip()
        claimed = stop is not None and stop.fallback_has_prefill_claim is True
        if claimed and partial and not _forces_tool_or_format(request):
            hop.messages = [*hop.messages, Message(role="assistant", content=partial)]
            prefill = partial
    return hop, prefill


@dataclass(slots=True)
class _Route:
    """One call's walk down the chain."""

    chain: FallbackChain
    current: ModelClient
    rank: int
    tried: set[str] = field(default_factory=set)
    hops: int = 0
    details: list[str] = field(default_factory=list)
    rule: Rule = FALLBACK
    """The policy's rule for the decline being handled (a failed hop keeps it)."""
    _derived: dict[str, ModelClient] = field(default_factory=dict)

    def peek(
        self, stop: StopDetails | None, finish: FinishReason | None = None
    ) -> tuple[ModelClient, int] | None:
        """The next model to ask after `current` declined with `finish` (with its rank),
        if any; without `finish`, after the last hop failed (the same rule holds)."""
        if finish is not None:
            policy = self.chain.policy
            self.rule = policy.rule_for(finish, stop) if policy is not None else FALLBACK
        if self.hops >= self.chain.max_hops or self.rule.action == "stop":
            return None
        if self.rule.model is not None:
            target = self.chain.named(self.rule.model)
            if target is None or _identity(target) in self.tried:
                return None
            return target, self.rank
        recommended = stop.recommended_model if stop is not None else None
        if recommended and self.chain.follow_recommended:
            derived = self._derive(recommended)
            if derived is not None and _identity(derived) not in self.tried:
                return derived, self.rank
        clients = self.chain.clients
        for rank in range(self.rank + 1, self.chain.ordered):
            if _identity(clients[rank]) not in self.tried:
                return clients[rank], rank
        return None

    def _derive(self, model_name: str) -> ModelClient | None:
        make = getattr(self.current, "for_model", None)
        provider = getattr(self.current, "provider", None)
        if make is None or not isinstance(provider, str):
            return None
        key = f"{provider}:{model_name}"
        if key not in self._derived:
            self._derived[key] = make(model_name)
        return self._derived[key]

    def advance(self, target: ModelClient, rank: int) -> None:
        self.current, self.rank = target, rank
        self.tried.add(_identity(target))
        self.hops += 1


def _report_hops(final: LLMResponse, details: list[str]) -> None:
    """Each hop of a finished call, with its outcome, to the fallback observers."""
    hops = [orjson.loads(detail) for detail in details]
    answered = [i for i, hop in enumerate(hops) if hop.get("type") == "fallback"]
    for index, hop in enumerate(hops):
        if hop.get("type") == "fallback_failed":
            outcome = "failed"
        elif answered and index == answered[-1] and not _is_blocked(final):
            outcome = "answered"
        else:
            outcome = "declined"
        report_fallback(outcome, str(hop["from"]["model"]), str(hop["to"]["model"]))


def _compose(
    final: LLMResponse, details: list[str], prefill: str | None, *, report: bool = True
) -> LLMResponse:
    """The answering (or last declining) response with the chain's hops recorded (a copy:
    the hop's own response is left as it came). `report`: the call is over, and its hops
    go to the fallback observers."""
    if report:
        _report_hops(final, details)
    content = final.content
    if prefill and not _is_blocked(final):
        content = prefill + (content or "")
    if not details and content == final.content:
        return final
    return dataclasses.replace(
        final, reasoning_details=[*details, *(final.reasoning_details or [])], content=content
    )


class FallbackChain:
    """A `ModelClient` over a primary and its fallbacks, tried in order on a decline."""

    def __init__(
        self,
        clients: Sequence[ModelClient],
        *,
        scope: Scope = "turn",
        max_hops: int | None = None,
        follow_recommended: bool = True,
        policy: BlockPolicy | None = None,
        ordered: int | None = None,
        confirm: Confirm | None = None,
    ) -> None:
        """`clients[:ordered]` are tried in order (all of them by default); the rest are
        only asked when a `policy` rule names them. An `ask` rule hops only when `confirm`
        says yes (without one, it stops)."""
        if not clients:
            raise ValueError("a fallback chain needs at least its primary client")
        if scope not in ("turn", "session"):
            raise ValueError(f"scope must be 'turn' or 'session', got {scope!r}")
        self.clients: list[ModelClient] = list(clients)
        self.scope: Scope = scope
        self.max_hops = max_hops if max_hops is not None else len(self.clients)
        if self.max_hops < 0:
            raise ValueError("max_hops cannot be negative")
        self.follow_recommended = follow_recommended
        self.policy = policy
        self.ordered = len(self.clients) if ordered is None else max(1, min(ordered, len(clients)))
        self.confirm = confirm
        self._start: ModelClient = self.clients[0]
        self._start_rank = 0
        self._attempts: list[Attempt] = []

    def __repr__(self) -> str:
        models = ", ".join(c.model for c in self.clients)
        return f"FallbackChain([{models}], scope={self.scope!r})"

    @property
    def model(self) -> str:
        """The primary's model string."""
        return self.clients[0].model

    @property
    def current_model(self) -> str:
        """The model the next call starts on (the primary, or the one pinned by scope)."""
        return self._start.model

    @property
    def attempts(self) -> list[Attempt]:
        return list(self._attempts)

    def begin_turn(self) -> None:
        """A new user turn: a turn-scoped chain returns to its primary."""
        if self.scope == "turn":
            self._start, self._start_rank = self.clients[0], 0
        for client in self.clients:
            client.begin_turn()

    def sync(self) -> SyncClient:
        """This chain behind a blocking facade (`refusals.transport.clients.SyncClient`)."""
        return SyncClient(self)

    async def aclose(self) -> None:
        for client in self.clients:
            closer = getattr(client, "aclose", None)
            if closer is not None:
                await closer()

    def named(self, model: str) -> ModelClient | None:
        """The chain's client for the `PROVIDER:MODEL` a rule names."""
        return next((c for c in self.clients if c.model == model), None)

    async def _allowed(self, route: _Route, blocked: LLMResponse, target: ModelClient) -> bool:
        """Whether the hop to `target` may go: always, unless the rule says ask first."""
        if route.rule.action != "ask":
            return True
        if self.confirm is None:
            return False  # nobody to ask (a headless run): the decline stands
        return await self.confirm(blocked, target.model)

    def _route(self) -> _Route:
        route = _Route(self, self._start, self._start_rank)
        route.tried.add(_identity(self._start))
        return route

    def _for_client(self, request: Request, client: ModelClient) -> Request:
        """`request` as sent to `client` in this chain: with the credit-token beta when it
        is an Anthropic client (a token is minted only for requests that carry it)."""
        wanted = _wire(client) == "anthropic" and len(self.clients) > 1
        if wanted and FALLBACK_CREDIT_BETA not in request.betas:
            request = request.with_model(request.model)
            request.betas.append(FALLBACK_CREDIT_BETA)
        return request

    def _settle(self, route: _Route, final: LLMResponse) -> None:
        """Pin the model that answered, so that the rest of the turn (or session) stays."""
        answered = final.finish_reason is not FinishReason.ERROR and not _is_blocked(final)
        if answered and route.current is not self._start:
            self._start, self._start_rank = route.current, route.rank

    async def complete(self, request: Request) -> LLMResponse:
        """One call down the chain, not streamed."""
        route = self._route()
        source = route.current
        blocked: LLMResponse | None = None
        prefill: str | None = None
        hop_req = self._for_client(request, source)
        while True:
            before = len(route.current.attempts)
            result = await route.current.complete(hop_req)
            self._attempts += route.current.attempts[before:]
            if result.finish_reason is FinishReason.ERROR and blocked is not None:
                # The fallback could not be asked: what the caller gets is the refusal.
                route.details.append(
                    hop_detail(source.model, route.current.model, blocked, failed=result)
                )
                nxt = route.peek(None)
                if nxt is None:
                    return _compose(blocked, route.details, None)
                route.advance(*nxt)
                hop_req, prefill = hop_request(request, blocked, source, route.current)
                hop_req = self._for_client(hop_req, route.current)
                continue
            if blocked is not None:
                route.details.append(
                    hop_detail(source.model, route.current.model, blocked, prefill=bool(prefill))
                )
            if _is_blocked(result):
                nxt = route.peek(result.stop_details, result.finish_reason)
                if nxt is not None and await self._allowed(route, result, nxt[0]):
                    blocked, source = result, route.current
                    route.advance(*nxt)
                    hop_req, prefill = hop_request(request, blocked, source, route.current)
                    hop_req = self._for_client(hop_req, route.current)
                    continue
            final = _compose(result, route.details, prefill)
            self._settle(route, final)
            return final

    def stream(self, request: Request) -> ModelStream:
        """One streamed call down the chain."""
        return ChainStream(self, request)


class ChainStream:
    """A streamed call of a `FallbackChain` (a `ModelStream`)."""

    def __init__(self, chain: FallbackChain, request: Request) -> None:
        self._chain = chain
        self._request = request
        self._response = LLMResponse()
        self._attempts: list[Attempt] = []
        self._inner: ModelStream | None = None
        self._iterator: AsyncIterator[StreamEvent] | None = None
        self._done = False
        # The hops so far, for a caller who reads `response` before the chain ends.
        self._details: list[str] = []
        self._prefill: str | None = None
        self._collected: ModelStream | None = None
        """The last hop whose attempts were collected (each is collected once)."""

    @property
    def response(self) -> LLMResponse:
        if not self._done and self._inner is not None:
            return _compose(self._inner.response, self._details, self._prefill, report=False)
        return self._response

    @property
    def attempts(self) -> list[Attempt]:
        return list(self._attempts)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def aclose(self) -> None:
        if self._iterator is not None:
            closer = getattr(self._iterator, "aclose", None)
            if closer is not None:
                await closer()
        inner = self._inner
        if inner is not None:
            await inner.aclose()
            if not self._done:
                # Stopped before the chain ended (at a verdict): the hop in flight keeps
                # what it read, and its attempts count like those of a finished hop.
                if self._collected is not inner:
                    self._collect(inner)
                self._finish(_compose(inner.response, self._details, self._prefill))

    def _collect(self, inner: ModelStream) -> None:
        self._collected = inner
        attempts = inner.attempts
        self._attempts += attempts
        self._chain._attempts += attempts

    async def _run(self) -> AsyncIterator[StreamEvent]:
        chain = self._chain
        route = chain._route()
        self._details = route.details
        source = route.current
        blocked: LLMResponse | None = None
        hop_req = chain._for_client(self._request, source)
        while True:
            inner = route.current.stream(hop_req)
            self._inner = inner
            held: list[StreamEvent] = []
            opened = False
            withheld: Verdict | None = None
            async for event in inner:
                if not opened:
                    final_verdict = (
                        isinstance(event, Verdict) and event.finish_reason is not FinishReason.ERROR
                    )
                    if not (final_verdict or shows_output(event)):
                        held.append(event)
                        continue
                    # The model answered (or declined): this hop counts from here on.
                    opened = True
                    if blocked is not None:
                        yield self._record(source, route.current, blocked)
                    for earlier in held:
                        yield earlier
                    held.clear()
                if (
                    isinstance(event, Verdict)
                    and event.finish_reason in _BLOCKED
                    and route.peek(event.stop_details, event.finish_reason) is not None
                ):
                    withheld = event  # another model will be asked
                    continue
                yield event
            self._collect(inner)
            result = inner.response
            if result.finish_reason is FinishReason.ERROR and blocked is not None and not opened:
                # The fallback could not be asked: try the next, else report the refusal.
                self._details.append(
                    hop_detail(source.model, route.current.model, blocked, failed=result)
                )
                nxt = route.peek(None)
                if nxt is None:
                    self._finish(_compose(blocked, route.details, None))
                    yield Verdict(
                        blocked.finish_reason, blocked.raw_finish_reason, blocked.stop_details
                    )
                    return
                route.advance(*nxt)
                hop_req, self._prefill = hop_request(self._request, blocked, source, route.current)
                hop_req = chain._for_client(hop_req, route.current)
                continue
            if blocked is not None and not opened:
                yield self._record(source, route.current, blocked)
            if _is_blocked(result):
                nxt = route.peek(result.stop_details, result.finish_reason)
                if nxt is not None and await chain._allowed(route, result, nxt[0]):
                    blocked, source = result, route.current
                    route.advance(*nxt)
                    hop_req, self._prefill = hop_request(
                        self._request, blocked, source, route.current
                    )
                    hop_req = chain._for_client(hop_req, route.current)
                    continue
            for event in held:
                yield event
            if withheld is not None:
                yield withheld
            self._finish(_compose(result, route.details, self._prefill))
            chain._settle(route, self._response)
            return

    def _record(
        self, source: ModelClient, target: ModelClient, blocked: LLMResponse
    ) -> FallbackSeam:
        """Record the hop from `source` to `target`; the seam event that marks it."""
        self._details.append(
            hop_detail(source.model, target.model, blocked, prefill=bool(self._prefill))
        )
        trigger = "refusal" if blocked.finish_reason is FinishReason.REFUSAL else "content_filter"
        return FallbackSeam(Fallback(source.model, target.model, trigger))

    def _finish(self, response: LLMResponse) -> None:
        self._response = response
        self._done = True
