"""Stream framing: Server-Sent Events and the AWS event-stream binary format.

Both parsers are incremental: feed them bytes as they arrive, in chunks of any size,
and they return the complete events so far. Splitting a stream at any byte offset gives
the same events.

SSE follows the WHATWG specification (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
CR, LF and CRLF line ends, comments, multi-line data, `event`, `id` and `retry`
fields, one leading space stripped from a value, a leading byte-order mark ignored.
Unlike a browser, `close()` also dispatches a last event that lacks its blank line:
some providers and recordings end that way, and dropping a final `message_stop` or
`[DONE]` would turn a complete stream into a truncated one.

A JSON body written bare where an event starts (not SSE: some servers write an error
that way mid-stream, pretty-printed) is kept as one event's data, so its error is read.

AWS event-stream (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream):
a 12-byte prelude (total length, headers length, prelude CRC32), headers, payload and a
message CRC32; both CRCs are checked. A message that fails a check ends the stream, but the
messages before it are kept (`FramingError.messages`), and the error names the same byte
offset however the stream was chunked.

JSON lines: one JSON value per line, LF, CRLF or CR line ends, a leading byte-order mark
ignored, blank lines skipped.

Every parser holds a line (or message) that is still arriving as a list of pieces joined
once it completes, so the cost is linear in the input however it is chunked.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import NamedTuple


class FramingError(ValueError):
    """The bytes are not valid framing (a bad CRC, a truncated message, invalid UTF-8).

    `messages` holds what the failing call completed before the bad bytes: a stream that
    breaks keeps the events it delivered whole.
    """

    def __init__(self, message: str, messages: list[EventStreamMessage] | None = None) -> None:
        super().__init__(message)
        self.messages: list[EventStreamMessage] = messages or []


class SSEEvent(NamedTuple):
    """One dispatched SSE event; `event` is None when the stream named no type.

    `data` stays bytes: the JSON parser reads UTF-8 bytes directly, so decoding to text
    first would only copy every payload once more. A named tuple rather than a dataclass:
    one is made per event on the hot path.
    """

    data: bytes
    event: str | None = None
    id: str | None = None
    retry: int | None = None

    @property
    def text(self) -> str:
        """The data as text, invalid UTF-8 replaced as the specification says."""
        return self.data.decode("utf-8", "replace")


RawSSE = tuple[bytes, str | None, str | None, int | None]

_AFTER_DATA = itemgetter(slice(6, None))
"""The value of a `data: ` line."""

_BOM = b"\xef\xbb\xbf"


def _skip_bom(held: list[bytes], chunk: bytes) -> bytes:
    """The start of a stream without its byte-order mark, which may arrive split over the
    first chunks: b"" while the bytes so far (kept in `held`) could still be one."""
    head = b"".join(held) + chunk
    held.clear()
    if len(head) < 3 and _BOM.startswith(head):
        held.append(head)
        return b""
    return head[3:] if head.startswith(_BOM) else head


def _split_lines(partial: list[bytes], chunk: bytes) -> list[bytes]:
    """The lines `chunk` completes (LF-separated), the first one joined to the pieces held
    in `partial`; the unfinished rest of `chunk` is appended to `partial`.

    A chunk without a line end is only kept, never copied: joining the pieces of a long
    line once, when it completes, keeps framing linear in the line's length.
    """
    if b"\n" not in chunk:
        # The middle of a long line (a search result, say): a memchr, not split's scan.
        if chunk:
            partial.append(chunk)
        return []
    lines = chunk.split(b"\n")
    if partial:
        partial.append(lines[0])
        lines[0] = b"".join(partial)
        partial.clear()
    rest = lines.pop()
    if rest:
        partial.append(rest)
    return lines


_FIELD_NAMES = frozenset({"data", "event", "id", "retry"})


class SSEParser:
    """Incremental Server-Sent Events parser, on bytes."""

    __slots__ = (
        "_data",
        "_event",
        "_last_id",
        "_names",
        "_partial",
        "_pending_cr",
        "_retry",
        "_started",
        "_stray",
    )

    def __init__(self) -> None:
        # The line still arriving, in pieces: joined once, when its line end comes.
        self._partial: list[bytes] = []
        self._pending_cr = False
        self._data: list[bytes] = []
        self._event: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self._started = False
        self._stray = False  # inside a bare JSON body that came between events
        # `event:` line → the name it sets (see `_name`).
        self._names: dict[bytes, str] = {}

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse `chunk`; return the events it completed."""
        return [SSEEvent(*fields) for fields in self.feed_fields(chunk)]

    def feed_fields(self, chunk: bytes) -> list[RawSSE]:
        """`feed`, with each event as a plain (data, event, id, retry) tuple.

        For the stream decoder's hot path: a plain tuple costs a tenth of a named one.
        """
        events: list[RawSSE] = []
        if not chunk:
            return events
        if not self._started:
            chunk = _skip_bom(self._partial, chunk)
            if not chunk:
                return events
            self._started = True
        if self._pending_cr:
            # A CR ended the previous chunk; an LF starting this one belongs to it.
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._pending_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = _split_lines(self._partial, chunk)
        if not lines:
            return events
        # Line by line up to the end of the first event; then, from that boundary, the
        # run of plain events all at once; line by line again for whatever is left.
        try:
            boundary = lines.index(b"") + 1
        except ValueError:
            boundary = len(lines)
        self._lines(lines[:boundary], events)
        if boundary < len(lines):
            rest = self._plain_run(lines, boundary, events)
            self._lines(lines[rest:], events)
        return events

    def _lines(self, lines: list[bytes], events: list[RawSSE]) -> None:
        """Interpret `lines` one by one, appending the events they dispatch."""
        data = self._data
        for line in lines:
            # `data:` lines and blank lines are nearly all of a stream: handled inline.
            if line.startswith(b"data:"):
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif not line:
                # _dispatch, inline: a blank line ends nearly every event.
                if data:
                    payload = data[0] if len(data) == 1 else b"\n".join(data)
                    events.append((payload, self._event or None, self._last_id, self._retry))
                    data.clear()
                    self._stray = False
                self._event = None
            elif line.startswith(b"event:"):
                name = self._names.get(line)
                if name is None:
                    name = self._name(line)
                self._event = name
            else:
                self._line(line)

    def _plain_run(self, lines: list[bytes], start: int, events: list[RawSSE]) -> int:
        """Dispatch, without a loop in Python, the run of plain events from `start` (an
        event boundary) to the last whole one: the index of the first line left.

        A plain event is `event: NAME` (a name seen before), `data: PAYLOAD` and a blank
        line, or the same without its event line, which is how providers send nearly
        every event. The run is taken only when every event in it has the same shape as
        the first; otherwise nothing is taken (`start`), and the lines go one by one.
        """
        named = lines[start].startswith(b"event:")
        period = 3 if named else 2
        count = (len(lines) - start) // period
        stop = start + count * period
        if count < 2 or lines[start + period - 1 : stop : period].count(b"") != count:
            return start
        data_lines = lines[start + period - 2 : stop : period]
        if not all(map(bytes.startswith, data_lines, repeat(b"data: "))):
            return start
        payloads = map(_AFTER_DATA, data_lines)
        if named:
            names = self._names
            event_lines = lines[start:stop:3]
            found = list(map(names.get, event_lines))
            if None in found:
                for line in set(event_lines):
                    if line not in names and (
                        not line.startswith(b"event:") or not self._name(line)
                    ):
                        return start
                found = list(map(names.get, event_lines))
                if None in found:
                    return start  # more distinct names than the cache holds
            events += zip(payloads, found, repeat(self._last_id), repeat(self._retry))
        else:
            events += zip(payloads, repeat(None), repeat(self._last_id), repeat(self._retry))
        return stop

    def _name(self, line: bytes) -> str:
        """The event name an `event:` line sets, kept for the next lines that repeat it.

        Names repeat on every event, so each distinct line is decoded once; bounded, so
        a stream naming endless distinct events stops being cached. An empty name (which
        dispatches as no name) is never cached.
        """
        value = line[7:] if line[6:7] == b" " else line[6:]
        name = value.decode("utf-8", "replace")
        if name and len(self._names) < 64:
            self._names[line] = name
        return name

    def close(self) -> list[SSEEvent]:
        """End of stream: flush a final line and a final event that lacks its blank line."""
        return [SSEEvent(*fields) for fields in self.close_fields()]

    def close_fields(self) -> list[RawSSE]:
        """`close`, with each event as a plain tuple."""
        events: list[RawSSE] = []
        if not self._started:
            # Fewer than three bytes in all, all of them a prefix of the byte-order mark.
            self._partial.clear()
        if self._partial:
            line = b"".join(self._partial)
            self._partial.clear()
            if line.startswith(b"data:"):
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
            else:
                self._line(line)
        self._dispatch(events)
        return events

    def _line(self, line: bytes) -> None:
        if line[:1] == b":":
            return
        raw_name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        name = raw_name.decode("utf-8", "replace")
        if name not in _FIELD_NAMES:
            # Not a field, which the specification skips. But a JSON body written bare
            # between events (an error some servers send mid-stream, pretty-printed over
            # several lines) is kept as one event's data, so that the error is read.
            if self._stray or (not self._data and line.lstrip()[:1] in (b"{", b"[")):
                self._stray = True
                self._data.append(line)
            return
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value.decode("utf-8", "replace")
        elif name == "id":
            if b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif name == "retry" and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, events: list[RawSSE]) -> None:
        data = self._data
        if data:
            payload = data[0] if len(data) == 1 else b"\n".join(data)
            events.append((payload, self._event or None, self._last_id, self._retry))
            data.clear()
        self._event = None
        self._stray = False


@dataclass(frozen=True, slots=True)
class EventStreamMessage:
    """One AWS event-stream message: its string headers and its payload bytes."""

    headers: dict[str, str]
    payload: bytes

    @property
    def event_type(self) -> str | None:
        """`:event-type` for events, `:exception-type` for modelled exceptions."""
        return self.headers.get(":event-type") or self.headers.get(":exception-type")

    @property
    def message_type(self) -> str:
        return self.headers.get(":message-type", "event")


_PRELUDE = struct.Struct(">III")
MAX_EVENT_STREAM_MESSAGE = 16 * 1024 * 1024
"""The largest event-stream message accepted (the AWS SDKs' limit)."""


class EventStreamParser:
    """Incremental AWS event-stream parser that checks both CRCs of every message.

    The first bad message ends the stream: `feed` raises a `FramingError` carrying the
    messages that call completed before it, and every later call raises it again.
    """

    __slots__ = ("_buffer", "_consumed", "_failed")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._consumed = 0  # bytes dropped from the buffer: offsets name stream bytes
        self._failed: FramingError | None = None

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        if self._failed is not None:
            raise FramingError(str(self._failed))
        self._buffer += chunk
        messages: list[EventStreamMessage] = []
        buffer = self._buffer
        offset = 0
        try:
            while len(buffer) - offset >= _PRELUDE.size:
                total, headers_len, prelude_crc = _PRELUDE.unpack_from(buffer, offset)
                at = self._consumed + offset
                if zlib.crc32(buffer[offset : offset + 8]) != prelude_crc:
                    raise FramingError(f"event-stream prelude CRC mismatch at byte {at}")
                if total < 16 or total > MAX_EVENT_STREAM_MESSAGE or headers_len > total - 16:
                    raise FramingError(
                        f"event-stream message length {total} at byte {at} is invalid"
                    )
                if len(buffer) - offset < total:
                    break
                end = offset + total
                (message_crc,) = struct.unpack_from(">I", buffer, end - 4)
                if zlib.crc32(buffer[offset : end - 4]) != message_crc:
                    raise FramingError(f"event-stream message CRC mismatch at byte {at}")
                headers_start = offset + 12
                headers = _headers(bytes(buffer[headers_start : headers_start + headers_len]))
                payload = bytes(buffer[headers_start + headers_len : end - 4])
                messages.append(EventStreamMessage(headers, payload))
                offset = end
        except FramingError as exc:
            self._failed = exc
            buffer.clear()
            raise FramingError(str(exc), messages) from None
        del buffer[:offset]
        self._consumed += offset
        return messages

    def close(self) -> list[EventStreamMessage]:
        if self._failed is not None:
            raise FramingError(str(self._failed))
        if self._buffer:
            left = len(self._buffer)
            self._buffer.clear()
            raise FramingError(f"event stream ended inside a message ({left} bytes left over)")
        return []


# Header value types of the event-stream format and their fixed sizes (None: 2-byte length).
_FIXED_SIZES = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}


def _headers(raw: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    pos = 0
    try:
        while pos < len(raw):
            name_len = raw[pos]
            name = raw[pos + 1 : pos + 1 + name_len].decode("utf-8")
            pos += 1 + name_len
            kind = raw[pos]
            pos += 1
            if kind in (6, 7):
                (size,) = struct.unpack_from(">H", raw, pos)
                value = raw[pos + 2 : pos + 2 + size]
                pos += 2 + size
                headers[name] = value.decode("utf-8") if kind == 7 else value.hex()
            elif kind in _FIXED_SIZES:
                size = _FIXED_SIZES[kind]
                if kind in (0, 1):
                    headers[name] = "true" if kind == 0 else "false"
                else:
                    headers[name] = str(int.from_bytes(raw[pos : pos + size], "big", signed=True))
                pos += size
            else:
                raise FramingError(f"event-stream header {name!r} has unknown type {kind}")
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise FramingError(f"event-stream headers are malformed: {exc}") from None
    return headers


def encode_event_stream(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string headers: for the mock provider and tests."""
    raw_headers = b"".join(
        bytes([len(name.encode())])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


class JSONLinesParser:
    """Incremental reader of one JSON value per line, yielding each line's bytes.

    Ollama's native stream, Bedrock and Gemini recordings stored one event per line. JSON
    text never holds a raw CR or LF (inside strings they are escaped), so LF, CRLF and a
    lone CR all end a line; blank lines are skipped and a leading byte-order mark is
    dropped. Each line is parsed later, by the stream decoder.
    """

    __slots__ = ("_partial", "_pending_cr", "_started")

    def __init__(self) -> None:
        self._partial: list[bytes] = []
        self._pending_cr = False
        self._started = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """Parse `chunk`; return the non-blank lines it completed, without line ends."""
        if not chunk:
            return []
        if not self._started:
            chunk = _skip_bom(self._partial, chunk)
            if not chunk:
                return []
            self._started = True
        if self._pending_cr:
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._pending_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return [line for line in _split_lines(self._partial, chunk) if line and not line.isspace()]

    def close(self) -> list[bytes]:
        """End of stream: the last line, when it lacks its line end."""
        line = b"".join(self._partial) if self._started else b""
        self._partial.clear()
        return [line] if line.strip() else []


class JSONArrayParser:
    """Incremental reader of a streamed JSON array, yielding each element's bytes.

    Gemini's `streamGenerateContent` without `alt=sse` answers with one JSON array whose
    elements (pretty-printed, over many lines) arrive as they are generated. Only the
    nesting is tracked here (strings and escapes included); each element is parsed later.
    """

    __slots__ = ("_buffer", "_closed", "_depth", "_escape", "_in_string", "_pos", "_start")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._pos = 0
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._start: int | None = None
        self._closed = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """Parse `chunk`; return the elements it completed, as raw JSON bytes."""
        buffer = self._buffer
        buffer += chunk
        elements: list[bytes] = []
        depth, in_string, escape, start = self._depth, self._in_string, self._escape, self._start
        pos = self._pos
        end = len(buffer)
        while pos < end and not self._closed:
            byte = buffer[pos]
            if in_string:
                if escape:
                    escape = False
                elif byte == 0x5C:  # backslash
                    escape = True
                elif byte == 0x22:  # quote
                    in_string = False
            elif byte == 0x22:
                in_string = True
            elif byte in (0x7B, 0x5B):  # { [
                depth += 1
                if depth == 2 and start is None:
                    start = pos
            elif byte in (0x7D, 0x5D):  # } ]
                depth -= 1
                if depth == 1 and start is not None:
                    elements.append(bytes(buffer[start : pos + 1]))
                    start = None
                elif depth <= 0:
                    self._closed = True
            pos += 1
        # Drop what is consumed, keeping an element that is still arriving.
        keep = start if start is not None else pos
        del buffer[:keep]
        self._pos = pos - keep
        self._start = 0 if start is not None else None
        self._depth, self._in_string, self._escape = depth, in_string, escape
        return elements

    def close(self) -> list[bytes]:
        """End of stream: an array that never closed is a truncated stream."""
        if not self._closed:
            left = len(self._buffer)
            raise FramingError(
                f"the JSON array stream ended before its closing bracket ({left} bytes left over)"
            )
        return []
