"""Decode any provider's response stream incrementally: framing, then the wire format.

`StreamDecoder` takes raw bytes in chunks of any size. It recognises the framing from
the first bytes (AWS event-stream, Server-Sent Events, or one JSON object per line) and
the wire format from the first event (or from `provider`), then hands each event to that
provider module's decoder. Its `response` is the `LLMResponse` so far.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from typing import Any, Literal

import orjson

from refusals.events import StreamAccumulator, StreamError, StreamEvent, WireDecoder
from refusals.model import (
    ErrorKind,
    LLMResponse,
    ProviderError,
    close_truncated_json,
    loads_lenient,
)
from refusals.providers import (
    PROVIDERS,
    NormalizeError,
    bedrock,
    stream_decoder_for,
)
from refusals.providers._common import bounded_message
from refusals.transport.framing import (
    MAX_EVENT_STREAM_MESSAGE,
    EventStreamMessage,
    EventStreamParser,
    FramingError,
    JSONArrayParser,
    JSONLinesParser,
    SSEParser,
)

STREAM_MEDIA_TYPES = frozenset(
    {
        "text/event-stream",
        "application/vnd.amazon.eventstream",
        "application/x-ndjson",
        "application/jsonl",
        "application/x-jsonlines",
    }
)
"""Content types of a streamed provider response."""


def media_type(headers: Any) -> str:
    """The `content-type` of a headers mapping, without parameters, lower-cased."""
    value = headers.get("content-type") or ""
    return str(value).split(";", 1)[0].strip().lower()


def body_decompressor(headers: Any) -> Any | Literal[False] | None:
    """A zlib decompressor for the body's coding, None for none, False when unsupported."""
    coding = str(headers.get("content-encoding") or "").strip().lower()
    if coding in ("", "identity"):
        return None
    if coding in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if coding == "deflate":
        # Servers send zlib-wrapped or gzip data under this name; accept both.
        return zlib.decompressobj(zlib.MAX_WBITS | 32)
    return False


Framing = Literal["sse", "event-stream", "json-lines", "json-array"]
_FRAMINGS: tuple[Framing, ...] = ("sse", "event-stream", "json-lines", "json-array")

_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r\n"
# The field names an SSE stream's first line may carry (b"": a `:` comment line).
_SSE_FIELDS = frozenset({b"data", b"event", b"id", b"retry", b""})
# Longer than any of those names: a first line that shows no `:` or line end by then is
# not SSE.
_SSE_NAME_LIMIT = 32


def sniff_framing(head: bytes) -> Framing:
    """The framing a stream uses, from its first bytes."""
    if len(head) >= 12:
        total, headers_len, crc = struct.unpack_from(">III", head)
        # A valid first message is at most 16 MiB, so its first byte is 0 or 1: text never
        # reads as an event-stream prelude, whatever its first 12 bytes.
        if zlib.crc32(head[:8]) == crc and headers_len < total <= MAX_EVENT_STREAM_MESSAGE:
            return "event-stream"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"[":
        return "json-array"
    if text[:1] == b"{":
        return "json-lines"
    return "sse"


class StreamDecoder:
    """Incremental decoder for any provider's stream."""

    def __init__(self, provider: str | None = None, framing: Framing | None = None) -> None:
        if provider is not None and not isinstance(provider, str):
            raise TypeError(
                f"provider must be a provider name (str) or None, got {type(provider).__name__}"
            )
        if framing is not None and framing not in _FRAMINGS:
            raise TypeError(f"framing must be one of {', '.join(_FRAMINGS)} or None")
        if provider is not None and provider not in PROVIDERS:
            raise NormalizeError(
                f"unknown provider {provider!r}; expected one of: {', '.join(PROVIDERS)}"
            )
        self.provider = provider
        self.framing: Framing | None = framing
        self._head = b""
        self._sse: SSEParser | None = None
        self._binary: EventStreamParser | None = None
        self._array: JSONArrayParser | None = None
        self._jsonl: JSONLinesParser | None = None
        # The start of an SSE stream's first line, until it shows whether it is SSE.
        self._first_line: bytes | None = b""
        self._failed = False  # the framing broke: the rest of the bytes mean nothing
        self._wire: WireDecoder | None = None
        self._pending: list[StreamEvent] = []
        self._closed = False

    @property
    def response(self) -> LLMResponse:
        """The response accumulated so far (an error when nothing was decoded)."""
        if self._wire is None:
            return _empty_response(self.provider, self._pending)
        return self._wire.response

    @property
    def verdict_index(self) -> int | None:
        """Index (from 0) of the wire event that carried the verdict."""
        return self._wire.acc.verdict_index if self._wire is not None else None

    @property
    def events_seen(self) -> int:
        return self._wire.acc.events_seen if self._wire is not None else 0

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """Decode the next bytes; return the stream events they completed."""
        if self._failed:
            return []
        if self.framing is None:
            head = self._head + chunk
            start = head.lstrip(_BOM + _BLANK)[:1]
            if not start:
                # Only blank lines so far: kept as the byte-order mark alone, so that a
                # long run of them is not copied again with every chunk.
                self._head = _BOM if head.startswith(_BOM) else b""
                return []
            # Text framings show themselves in one printable byte; anything else may be
            # an event-stream prelude (its first byte is a length, 0 or 1), which needs
            # its 12 bytes to be checked.
            if not 0x20 < start[0] < 0x7F and len(head) < 12:
                self._head = head
                return []
            chunk, self._head = head, b""
            self.framing = sniff_framing(chunk)
        return self._feed_framed(chunk)

    @property
    def provider_error(self) -> bool:
        """Whether the stream's first error is one the provider sent (an error event),
        rather than a stream that broke off or could not be read."""
        wire = self._wire
        return wire is not None and wire.acc.error is not None and wire.acc.error.error is not None

    def close(self, *, broken: bool = False) -> list[StreamEvent]:
        """End of stream: flush, and report a stream that stopped before its end.

        `broken`: the connection broke, so the last event may be cut off; its members
        that arrived whole are read (see `close_truncated_json`), so that a verdict it
        carries counts.
        """
        if self._closed:
            return []
        self._closed = True
        events: list[StreamEvent] = []
        if self.framing is None and self._head.lstrip(_BOM + _BLANK):
            self.framing = sniff_framing(self._head)
            events += self._feed_framed(self._head)
        self._head = b""
        if self._first_line:
            events += self._check_first_line(b"", final=True)
        try:
            if self._failed:
                pass
            elif self._sse is not None:
                for data, name, _, _ in self._sse.close_fields():
                    events += self._dispatch(name, _closed(data) if broken else data)
            elif self._binary is not None:
                self._binary.close()
            elif self._array is not None:
                self._array.close()
            elif self._jsonl is not None:
                for line in self._jsonl.close():
                    events += self._dispatch(None, _closed(line) if broken else line)
        except FramingError as exc:
            events += self._error(str(exc))
        if self._wire is None:
            events += self._error("the stream has no events; expected a provider event stream")
            return events
        return events + self._wire.close()

    def _feed_framed(self, chunk: bytes) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        try:
            if self.framing == "sse":
                if self._sse is None:
                    self._sse = SSEParser()
                if self._first_line is not None:
                    events += self._check_first_line(chunk)
                wire = self._wire
                for data, name, _, _ in self._sse.feed_fields(chunk):
                    if wire is not None:
                        events += wire.feed(name, data)
                    else:
                        events += self._dispatch(name, data)
                        wire = self._wire
            elif self.framing == "event-stream":
                if self._binary is None:
                    self._binary = EventStreamParser()
                try:
                    messages = self._binary.feed(chunk)
                except FramingError as exc:
                    # The messages before the bad one were whole: they still count.
                    self._failed = True
                    events += self._messages(exc.messages)
                    raise
                events += self._messages(messages)
            elif self.framing == "json-array":
                if self._array is None:
                    self._array = JSONArrayParser()
                for element in self._array.feed(chunk):
                    events += self._dispatch(None, element)
            else:
                if self._jsonl is None:
                    self._jsonl = JSONLinesParser()
                for line in self._jsonl.feed(chunk):
                    events += self._dispatch(None, line)
        except FramingError as exc:
            events += self._error(str(exc))
        return events

    def _messages(self, messages: list[EventStreamMessage]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for message in messages:
            if message.message_type == "error":
                # A service error outside the modelled exceptions: it ends the stream, and
                # only its headers say what happened.
                # Provider text: redacted and bounded like every other error message.
                code = message.headers.get(":error-code", "UnknownError")
                text = message.headers.get(":error-message", "")
                wire = self._bedrock_wire()
                if wire is not None:
                    # Bedrock's own reading: transient, unless the message says blocked.
                    events += wire.service_error(code, text)
                else:
                    shown = bounded_message(f"{code}: {text}".rstrip(": ")) or code
                    events += self._error(shown, ErrorKind.TRANSIENT)
            else:
                events += self._dispatch(message.event_type, message.payload)
        return events

    def _bedrock_wire(self) -> bedrock.ConverseStreamReader | None:
        """The Bedrock decoder an event-stream error belongs to (made if none was yet)."""
        if self._wire is None:
            if self.provider not in (None, "bedrock"):
                return None
            self._wire = bedrock.ConverseStreamReader("bedrock")
            self.provider = "bedrock"
            for event in self._pending:
                self._wire.acc.apply(event, 0)
            self._pending.clear()
        return self._wire if isinstance(self._wire, bedrock.ConverseStreamReader) else None

    def _check_first_line(self, chunk: bytes, *, final: bool = False) -> list[StreamEvent]:
        """An SSE stream whose first line is no SSE field is an error, not skipped (as the
        specification would skip an unknown field): it is no stream this decoder knows."""
        seen = (self._first_line or b"") + chunk
        text = (seen[3:] if seen.startswith(_BOM) else seen).lstrip(b"\r\n")
        text = text[: _SSE_NAME_LIMIT + 1]
        ends = [i for i in (text.find(b":"), text.find(b"\r"), text.find(b"\n")) if i >= 0]
        if not ends and len(text) <= _SSE_NAME_LIMIT and not final:
            self._first_line = text
            return []
        self._first_line = None
        name = text[: min(ends)] if ends else text
        if name in _SSE_FIELDS or not text:
            return []
        return self._error(
            "the stream's first line is neither an SSE field (data:, event:, id:, retry: "
            "or a : comment) nor JSON; expected an SSE, AWS event-stream or JSON-lines stream"
        )

    def _dispatch(self, name: str | None, data: str | bytes) -> list[StreamEvent]:
        if self._wire is None:
            self._wire = self._choose(name, data)
            if self._wire is None:
                return self._error(
                    "the first stream event is of no known provider format; expected an "
                    "Anthropic, OpenAI, Azure, Gemini, Bedrock, Cohere or Ollama stream"
                )
            # What went wrong before the first known event is part of this stream's
            # story: an unrecognised start is never silently dropped.
            for event in self._pending:
                self._wire.acc.apply(event, 0)
            self._pending.clear()
        return self._wire.feed(name, data)

    def _choose(self, name: str | None, data: str | bytes) -> WireDecoder | None:
        try:
            payload: Any = orjson.loads(data)
        except orjson.JSONDecodeError:
            # An escaped lone surrogate or stray bytes in provider text must not hide
            # which format the stream is.
            try:
                payload = loads_lenient(data)
            except ValueError:
                payload = None
        found = stream_decoder_for(name, payload, self.provider)
        if found is None:
            return None
        self.provider = found[1]
        return found[0]

    def _error(
        self, message: str, kind: ErrorKind = ErrorKind.INVALID_REQUEST
    ) -> list[StreamEvent]:
        error = StreamError(message, ProviderError(kind, message=message))
        if self._wire is not None:
            self._wire.acc.apply(error, self._wire.acc.events_seen)
        else:
            self._pending.append(error)
        return [error]


def _closed(data: bytes) -> bytes:
    """A last event cut off in transit, closed after its whole members (as it is when it
    is whole, or when nothing of it can be kept)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        closed = close_truncated_json(bytes(data))
        if closed is not None:
            return closed
    return data


def _empty_response(provider: str | None, pending: list[StreamEvent]) -> LLMResponse:
    acc = StreamAccumulator(provider=provider)
    for event in pending or [StreamError("no stream events were decoded")]:
        acc.apply(event, 0)
    return acc.response


def decode_stream(
    chunks: Iterable[bytes] | bytes, provider: str | None = None
) -> tuple[LLMResponse, StreamDecoder]:
    """Decode a whole stream; return the final response and the decoder (for its indexes)."""
    decoder = StreamDecoder(provider)
    if isinstance(chunks, bytes | bytearray):
        chunks = [bytes(chunks)]
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.close()
    return decoder.response, decoder
