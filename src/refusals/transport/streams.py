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
from types import ModuleType
from typing import Any, Literal

import orjson

from refusals.model import ErrorKind, LLMResponse, ProviderError
from refusals.providers import (
    PROVIDERS,
    NormalizeError,
    anthropic,
    bedrock,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)
from refusals.stream import StreamAccumulator, StreamError, StreamEvent, WireDecoder
from refusals.transport.framing import (
    EventStreamParser,
    FramingError,
    JSONArrayParser,
    SSEParser,
)

Framing = Literal["sse", "event-stream", "json-lines", "json-array"]

# Detection order: the most specific shapes first (Azure and OpenRouter chunks are
# OpenAI chat chunks with extras, so the chat module decides between them).
_MODULES: tuple[ModuleType, ...] = (
    anthropic,
    openai_responses,
    bedrock,
    gemini,
    cohere,
    ollama,
    openai_chat,
)
_BY_PROVIDER: dict[str, tuple[ModuleType, ...]] = {
    "anthropic": (anthropic,),
    "openai-responses": (openai_responses,),
    "gemini": (gemini,),
    "vertex": (gemini,),
    "bedrock": (bedrock,),
    "cohere": (cohere,),
    "ollama": (ollama, openai_chat),
}
_CHAT = (openai_responses, openai_chat)


def sniff_framing(head: bytes) -> Framing:
    """The framing a stream uses, from its first bytes."""
    if len(head) >= 12:
        total, headers_len, crc = struct.unpack_from(">III", head)
        if zlib.crc32(head[:8]) == crc and headers_len < total:
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
        self._lines = b""
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
        if self.framing is None:
            self._head += chunk
            start = self._head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
            # Text framings show themselves in one byte; an event-stream prelude starts
            # with a zero byte (a length) and needs its 12 bytes to be checked.
            if not start or (start == b"\x00" and len(self._head) < 12):
                return []
            chunk, self._head = self._head, b""
            self.framing = sniff_framing(chunk)
        return self._feed_framed(chunk)

    def close(self) -> list[StreamEvent]:
        """End of stream: flush, and report a stream that stopped before its end."""
        if self._closed:
            return []
        self._closed = True
        events: list[StreamEvent] = []
        if self.framing is None and self._head:
            self.framing = sniff_framing(self._head)
            events += self._feed_framed(self._head)
            self._head = b""
        try:
            if self._sse is not None:
                for data, name, _, _ in self._sse.close_fields():
                    events += self._dispatch(name, data)
            if self._binary is not None:
                self._binary.close()
            if self._array is not None:
                self._array.close()
            if self.framing == "json-lines" and self._lines.strip():
                events += self._dispatch(None, self._lines)
                self._lines = b""
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
                for message in self._binary.feed(chunk):
                    if message.message_type == "error":
                        # A service error outside the modelled exceptions: it ends the
                        # stream, and only its headers say what happened.
                        code = message.headers.get(":error-code", "UnknownError")
                        text = message.headers.get(":error-message", "")
                        events += self._error(f"{code}: {text}".rstrip(": "), ErrorKind.TRANSIENT)
                    else:
                        events += self._dispatch(message.event_type, message.payload)
            elif self.framing == "json-array":
                if self._array is None:
                    self._array = JSONArrayParser()
                for element in self._array.feed(chunk):
                    events += self._dispatch(None, element)
            else:
                self._lines += chunk
                *lines, self._lines = self._lines.split(b"\n")
                for line in lines:
                    if line.strip():
                        events += self._dispatch(None, line)
        except FramingError as exc:
            events += self._error(str(exc))
        return events

    def _dispatch(self, name: str | None, data: str | bytes) -> list[StreamEvent]:
        if self._wire is None:
            self._wire = self._choose(name, data)
            if self._wire is None:
                return self._error(
                    "the first stream event is of no known provider format; expected an "
                    "Anthropic, OpenAI, Azure, Gemini, Bedrock, Cohere or Ollama stream"
                )
        return self._wire.feed(name, data)

    def _choose(self, name: str | None, data: str | bytes) -> WireDecoder | None:
        try:
            payload: Any = orjson.loads(data)
        except orjson.JSONDecodeError:
            payload = None
        if self.provider is not None:
            candidates = _BY_PROVIDER.get(self.provider, _CHAT)
            for module in candidates:
                if module.detect_stream(name, payload) is not None:
                    return _new(module, self.provider)
            return _new(candidates[-1], self.provider)
        for module in _MODULES:
            found: str | None = module.detect_stream(name, payload)
            if found is not None:
                self.provider = found
                return _new(module, found)
        return None

    def _error(
        self, message: str, kind: ErrorKind = ErrorKind.INVALID_REQUEST
    ) -> list[StreamEvent]:
        error = StreamError(message, ProviderError(kind, message=message))
        if self._wire is not None:
            self._wire.acc.apply(error, self._wire.acc.events_seen)
        else:
            self._pending.append(error)
        return [error]


def _new(module: ModuleType, provider: str) -> WireDecoder:
    decoder: WireDecoder = module.StreamDecoder(provider)
    return decoder


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
