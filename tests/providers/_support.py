"""Helpers shared by the provider tests: fixture paths and notice texts, the Hypothesis
strategies that mutate, truncate and invent payloads and streams, and the checks that the
tests of several wire formats run alike.

Sections: full responses (`normalize`), streams in general, Anthropic- and Bedrock-style
event edits, and the OpenAI stream cases (`Case`, `check_*`), which the Chat Completions,
Azure, Responses and compatible-vendor stream tests share.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from refusals import notice
from refusals.events import StreamError, StreamEvent, WireDecoder
from refusals.model import FinishReason, LLMResponse
from refusals.providers import (
    NormalizeError,
    anthropic,
    bedrock,
    cohere,
    gemini,
    normalize,
    ollama,
    openai_chat,
    openai_responses,
)
from refusals.transport.framing import SSEParser
from refusals.transport.streams import StreamDecoder, decode_stream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NEXT_STEP = "The request was not retried; rephrase it or switch models."
DECLINED = "The model declined this request"
FILTERED = "The provider's content filter blocked this request"
INCOMPLETE = "the stream ended before its terminal event; the response is incomplete"
BLOCKED = (FinishReason.REFUSAL, FinishReason.CONTENT_FILTER)
"""Verdicts that a cut, mutated or reshuffled stream must never turn into a stop."""

# Detection without a provider name asks every module in turn, in this order.
DETECTING = (anthropic, openai_responses, bedrock, gemini, cohere, ollama, openai_chat)


def read(path: Path) -> bytes:
    return path.read_bytes()


def json_fixtures(*folders: str) -> list[Path]:
    """The `.json` fixtures in these folders (below tests/fixtures), folder by folder."""
    return [path for folder in folders for path in sorted((FIXTURES / folder).glob("*.json"))]


def category_and_explanation(response: LLMResponse) -> tuple[str | None, str | None]:
    stop = response.stop_details
    return (stop.category, stop.explanation) if stop is not None else (None, None)


def details_of(response: LLMResponse, kind: str) -> list[dict[str, Any]]:
    return [d for d in response.decoded_details() if d.get("type") == kind]


# Full responses: mutated, truncated and random payloads -----------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
"""Any JSON value, small."""


def json_values(signal_words: Sequence[str]) -> st.SearchStrategy[Any]:
    """Small JSON values, NaN and infinities included, whose strings are often a wire
    format's own words (so a mutation can say "refusal" where it should not)."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=12)
        | st.sampled_from(list(signal_words)),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=6,
    )


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value, the root `()` first, depth first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(json_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(json_paths(child, (*prefix, index)))
    return found


def edit_in_place(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    """Set the value at `path` (not the root) to `value`, or delete it."""
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of `value` with what is at `path` replaced by `new`."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (replace_at(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(replace_at(v, rest, new) if i == head else v) for i, v in enumerate(value)]


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """`value` with a few subtrees replaced by random JSON or deleted."""
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(value)))
        if not path:
            value = draw(JSON)
            continue
        parent = value
        try:
            for step in path[:-1]:
                parent = parent[step]
            if draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(JSON)
        except (KeyError, IndexError, TypeError):
            continue
    return value


def normalize_or_reject(payload: Any, providers: Sequence[str | None]) -> None:
    """Normalise `payload` naming each provider in turn: a response or NormalizeError."""
    for provider in providers:
        with contextlib.suppress(NormalizeError):
            normalize(payload, provider=provider)


def check_never_raises_but_normalize_error(
    data: st.DataObject,
    path: Path,
    providers: tuple[str | None, ...],
    statuses: Sequence[int | None] = (None, 200, 400, 403, 429, 500),
) -> None:
    """Mutated and truncated versions of the body at `path` give a response or NormalizeError."""
    raw = read(path)
    body = data.draw(mutated(orjson.loads(raw)))
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    status = data.draw(st.sampled_from(list(statuses)))
    for payload in (body, cut):
        for provider in providers:
            try:
                result = normalize(payload, provider=provider, status=status)
            except NormalizeError:
                continue
            assert isinstance(result, LLMResponse)
            assert isinstance(result.finish_reason, FinishReason)


# Streams ----------------------------------------------------------------------------------


def decode(
    data: bytes | list[bytes], provider: str | None = None
) -> tuple[LLMResponse, StreamDecoder]:
    return decode_stream(data, provider)


def decode_with_events(
    data: bytes, provider: str | None = None
) -> tuple[LLMResponse, StreamDecoder, list[StreamEvent]]:
    """Decode, keeping every stream event the decoder produced (close() included)."""
    decoder = StreamDecoder(provider)
    events = decoder.feed(data) + decoder.close()
    return decoder.response, decoder, events


def decode_events(raw: bytes) -> tuple[LLMResponse, list[StreamEvent]]:
    """The response and every stream event, those `close()` adds included."""
    response, _, events = decode_with_events(raw)
    return response, events


def decode_closing(raw: bytes, provider: str) -> tuple[LLMResponse, StreamDecoder, list[Any]]:
    """Decode `raw` and return what `close()` reported too."""
    decoder = StreamDecoder(provider)
    decoder.feed(raw)
    closing = decoder.close()
    return decoder.response, decoder, closing


def feed_events(decoder: WireDecoder, events: Sequence[tuple[str | None, Any]]) -> LLMResponse:
    """Feed (event name, payload) pairs to a wire decoder as JSON text, then close it."""
    for name, payload in events:
        decoder.feed(name, json.dumps(payload))
    decoder.close()
    return decoder.response


def in_chunks(raw: bytes, cuts: list[int]) -> list[bytes]:
    """`raw` split at the offsets `cuts` (clamped, in any order, repeats ignored)."""
    points = sorted({min(max(cut, 0), len(raw)) for cut in cuts})
    edges = [0, *points, len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(edges)]


def split_events(path: Path) -> tuple[list[bytes], bytes]:
    """A stream file's events as raw bytes, and the separator that ends each."""
    raw = path.read_bytes()
    separator = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
    if path.suffix != ".sse":
        separator = b"\n"
    return [event for event in raw.split(separator) if event.strip()], separator


def first_event(path: Path) -> tuple[str | None, Any]:
    """The SSE event name (None for one payload a line) and decoded payload of a stream
    file's first event; the payload is None when it is not JSON."""
    raw = path.read_bytes()
    if path.suffix == ".sse":
        parser = SSEParser()
        events = parser.feed(raw) + parser.close()
        name, data = events[0].event, events[0].data
    else:
        name, data = None, raw.lstrip().splitlines()[0]
    try:
        return name, orjson.loads(data)
    except orjson.JSONDecodeError:
        return name, None


def stream_fixtures(exclude: Callable[[Path], bool]) -> list[Path]:
    """Every stream fixture (`.sse`, `.ndjson`, `.chunks.txt`) but those `exclude` names."""
    found = [
        path
        for path in sorted(FIXTURES.rglob("*"))
        if path.is_file()
        and (path.suffix in (".sse", ".ndjson") or path.name.endswith(".chunks.txt"))
        and not exclude(path)
    ]
    assert found
    return found


def other_providers_events(own: str) -> list[tuple[str, str | None, Any]]:
    """(fixture, event name, decoded payload or None) of every event in the `.sse` and
    `.chunks.txt` stream fixtures outside the folder `own`."""
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.name.endswith((".sse", ".chunks.txt")):
            continue
        if own in path.relative_to(FIXTURES).parts:
            continue
        raw = path.read_bytes()
        if path.name.endswith(".sse"):
            parser = SSEParser()
            pairs = [(e.event, e.data) for e in [*parser.feed(raw), *parser.close()]]
        else:
            pairs = [(None, line) for line in raw.splitlines() if line.strip()]
        for event_name, data in pairs:
            try:
                payload = json.loads(data)
            except json.JSONDecodeError:
                payload = None
            found.append((str(path.relative_to(FIXTURES)), event_name, payload))
    return found


def facts(response: LLMResponse) -> dict[str, Any]:
    """What a stream and its full response must agree on, at the least."""
    stop = response.stop_details
    return {
        "finish_reason": response.finish_reason,
        "category": stop.category if stop else None,
        "categories": stop.categories if stop else (),
        "explanation": stop.explanation if stop else None,
        "content": response.content,
        "notice": notice(response),
    }


def agreed(response: LLMResponse, *fields: str) -> dict[str, Any]:
    """What a stream and its full response must agree on: `facts`, the raw finish reason,
    whether the content was cut off, tool calls and reasoning, and the named `fields`."""
    found = facts(response) | {
        "raw_finish_reason": response.raw_finish_reason,
        "cut_off": response.cut_off,
        "tool_calls": response.tool_calls,
        "reasoning": response.reasoning,
    }
    for name in fields:
        found[name] = getattr(response, name)
    return found


def check_split_at_any_byte(path: Path) -> None:
    """Fed in two pieces split at every byte, or one byte at a time, the stream decodes as
    in one piece, its verdict on the same event."""
    raw = path.read_bytes()
    whole, whole_decoder = decode(raw)
    for cut in range(len(raw) + 1):
        response, decoder = decode(in_chunks(raw, [cut]))
        assert response == whole
        assert decoder.verdict_index == whole_decoder.verdict_index
    bytewise, _ = decode([raw[i : i + 1] for i in range(len(raw))])
    assert bytewise == whole


def cut_anywhere(data: st.DataObject, path: Path) -> tuple[LLMResponse, LLMResponse]:
    """The stream decoded whole, and cut at a drawn offset and fed in drawn pieces."""
    raw = path.read_bytes()
    whole, _ = decode(raw)
    cut = data.draw(st.integers(0, len(raw)))
    cuts = data.draw(st.lists(st.integers(0, cut), max_size=5))
    response, _ = decode(in_chunks(raw[:cut], cuts))
    return whole, response


BYTE_EDITS = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 10_000), st.integers(0, 255)),
    min_size=1,
    max_size=3,
)
"""Edits for `edited`: (0 overwrite, 1 delete, 2 insert; position; byte)."""


def edited(raw: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    out = bytearray(raw)
    for kind, position, value in edits:
        if not out:
            break
        at = position % len(out)
        if kind == 0:
            out[at] = value
        elif kind == 1:
            del out[at]
        else:
            out.insert(at, value)
    return bytes(out)


def keyed_json(keys: Sequence[str], *extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """JSON values whose objects have the wire format's `keys` (and leaves from `extra`)."""
    leaves = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
    )
    for more in extra:
        leaves |= more
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.sampled_from(list(keys)), children, max_size=5)
        ),
        max_leaves=20,
    )


# Anthropic- and Bedrock-style edits of decoded events ----------------------------------------

WRONG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.text(alphabet="abcxyz_", max_size=6),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(alphabet="abc", max_size=3), st.integers(), max_size=2),
)
"""Values of the wrong type or out of range for any field of a stream event."""


def event_json(
    keys: st.SearchStrategy[str], leaves: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Event payloads whose objects have keys drawn from `keys`, with integers beyond 64 bits."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False)
        | leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=5),
        max_leaves=25,
    )


# OpenAI stream cases (Chat Completions, Azure, Responses, compatible vendors) ---------------


@dataclass(frozen=True)
class Case:
    """One stream and everything it must decode to."""

    path: str
    provider: str
    verdict_index: int
    finish: FinishReason
    raw: str | None
    category: str | None = None
    categories: tuple[str, ...] = ()
    explanation: str | None = None
    notice: str | None = None
    cut_off: bool = False
    content: str | None = None
    partner: str | None = None
    """The full response (or error body) the stream must agree with."""
    named: str | None = None
    """The provider to name when decoding (None: the stream's shape says)."""

    @property
    def data(self) -> bytes:
        return (FIXTURES / self.path).read_bytes()

    def __str__(self) -> str:
        return self.path


def case_id(case: Case) -> str:
    return case.path


def stop_fields(response: LLMResponse) -> tuple[str | None, tuple[str, ...], str | None]:
    stop = response.stop_details
    if stop is None:
        return None, (), None
    return stop.category, stop.categories, stop.explanation


def check_case(case: Case) -> None:
    response, decoder = decode(case.data, case.named)
    assert response.provider == case.provider
    assert decoder.verdict_index == case.verdict_index
    assert response.finish_reason is case.finish
    assert response.raw_finish_reason == case.raw
    assert stop_fields(response) == (case.category, case.categories, case.explanation)
    assert notice(response) == case.notice
    assert response.cut_off is case.cut_off
    assert response.content == case.content
    if case.named is None:
        # Naming the provider the shape says changes nothing.
        assert decode(case.data, case.provider)[0] == response


def check_equivalent(case: Case) -> None:
    """The stream and its full response agree on everything a user is told."""
    assert case.partner is not None
    streamed, _ = decode(case.data, case.named)
    full = normalize((FIXTURES / case.partner).read_bytes())
    assert streamed.finish_reason is full.finish_reason
    assert stop_fields(streamed) == stop_fields(full)
    assert streamed.content == full.content
    assert notice(streamed) == notice(full)
    assert streamed.cut_off is full.cut_off
    assert streamed.reasoning == full.reasoning
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        (c.name, c.arguments) for c in full.tool_calls
    ]


def check_any_split(case: Case) -> None:
    """Fed in two pieces split at every byte offset (every few for long streams), or one
    byte at a time, the stream decodes exactly as in one piece."""
    data = case.data
    whole, decoder = decode(data, case.named)
    step = max(1, len(data) // 400)
    for cut in range(0, len(data) + 1, step):
        response, split = decode_stream([data[:cut], data[cut:]], case.named)
        assert response == whole, cut
        assert split.verdict_index == decoder.verdict_index
    response, _ = decode_stream([data[i : i + 1] for i in range(len(data))], case.named)
    assert response == whole


def event_ends(data: bytes) -> list[int]:
    """Byte offsets just after each framed event (a blank line, or a JSON line's newline)."""
    if data.lstrip()[:1] in (b"{", b"["):
        return [match.end() for match in re.finditer(rb"\n", data)]
    return [match.end() for match in re.finditer(rb"\r?\n\r?\n", data)]


def check_truncations(case: Case) -> None:
    """Cut after any whole event: before the verdict it is an error that says the stream
    ended early (never a stop); after a refusal or filter verdict it stays one."""
    data = case.data
    for end in event_ends(data):
        if end >= len(data.rstrip()):
            continue
        response, decoder, events = decode_with_events(data[:end], case.named)
        if decoder.events_seen <= case.verdict_index:
            assert response.finish_reason is FinishReason.ERROR, end
            messages = [e.message for e in events if isinstance(e, StreamError)]
            assert any(INCOMPLETE in m or "has no events" in m for m in messages), messages
        elif case.finish in BLOCKED:
            assert response.finish_reason is case.finish, end


def framed_events(data: bytes) -> tuple[list[bytes], bool]:
    """The stream's events as byte strings (comments dropped), and whether it is JSON lines."""
    if data.lstrip()[:1] in (b"{", b"["):
        return [line + b"\n" for line in data.split(b"\n") if line.strip()], True
    blocks = re.split(rb"\r?\n\r?\n", data)
    kept = [b for b in blocks if any(not line.startswith(b":") for line in b.splitlines() if line)]
    return [b + b"\n\n" for b in kept], False


def junk_event(value: Any, json_lines: bool) -> bytes:
    text = json.dumps(value).encode()  # big integers too, which orjson cannot write
    return text + b"\n" if json_lines else b"data: " + text + b"\n\n"


@st.composite
def shuffled_events(draw: st.DrawFn, case: Case) -> bytes:
    """The stream with events other than the first and the verdict's dropped or repeated,
    and junk events inserted after the first."""
    events, json_lines = framed_events(case.data)
    out = [events[0]]
    for index, event in enumerate(events[1:], start=1):
        action = (
            "keep"
            if index == case.verdict_index
            else draw(st.sampled_from(["keep", "keep", "drop", "twice"]))
        )
        if draw(st.integers(0, 5)) == 0:
            out.append(junk_event(draw(JSON), json_lines))
        if action != "drop":
            out.append(event)
        if action == "twice":
            out.append(event)
    return b"".join(out)


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    raw = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        if not raw:
            break
        at = draw(st.integers(0, len(raw) - 1))
        action = draw(st.sampled_from(["flip", "delete", "insert"]))
        if action == "flip":
            raw[at] = draw(st.integers(0, 255))
        elif action == "delete":
            del raw[at : at + draw(st.integers(1, 40))]
        else:
            piece = draw(st.sampled_from([b'"', b"{", b"}", b"null", b"[]", b"\n\n", b"1e999"]))
            raw[at:at] = piece
    return bytes(raw)


def check_fuzzed(data: st.DataObject, cases: list[Case]) -> None:
    """Truncated, mutated and reshuffled streams decode without raising; a stream that
    carries a refusal or filter is never a stop, and one cut before its verdict is an error."""
    case = data.draw(st.sampled_from(cases))
    raw = case.data
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    response, decoder = decode(cut, case.named)
    assert isinstance(response.finish_reason, FinishReason)
    if decoder.events_seen <= case.verdict_index:
        assert response.finish_reason is FinishReason.ERROR
    if case.finish in BLOCKED:
        assert response.finish_reason is not FinishReason.STOP
    for provider in (case.named, case.provider):
        mutated_stream, _ = decode(data.draw(mutated_bytes(raw)), provider)
        assert isinstance(mutated_stream.finish_reason, FinishReason)
    if case.finish in BLOCKED:
        shuffled, _ = decode(data.draw(shuffled_events(case)), case.provider)
        assert shuffled.finish_reason in BLOCKED


def stream_files(*folders: str) -> list[Path]:
    """The `.sse` and `.chunks.txt` streams in these fixture folders and their `written/`."""
    found: list[Path] = []
    for folder in folders:
        for sub in ("", "written"):
            directory = FIXTURES / folder / sub
            found += sorted(directory.glob("*.sse")) + sorted(directory.glob("*.chunks.txt"))
    return found


CHAT_STREAMS = stream_files("openai-chat", "openrouter", "deepseek", "xai", "groq", "mistral")
CHAT_STREAMS += [p for p in stream_files("azure", "ollama") if "responses" not in p.name]
"""Every Chat Completions stream fixture, of every vendor."""


def sse_chunk(body: dict[str, Any]) -> bytes:
    """One JSON body as an unnamed SSE event."""
    return b"data: " + orjson.dumps(body) + b"\n\n"


DONE = b"data: [DONE]\n\n"
