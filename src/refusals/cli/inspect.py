"""`refusals inspect`: the verdict on one recorded response body, stream or error body.

Input is untrusted twice over: the file may be anything (a directory, `/dev/zero`, a
sparse file of gigabytes, a pipe that never ends) and the provider text in it may carry
terminal controls. So input is read in chunks up to `--max-bytes`, a stream is fed to the
decoder as it is read rather than read whole, and every string from the provider is
rendered through `refusals.sanitize` (one line per table cell, long fields cut; `--json`
keeps the full text). Ctrl-C exits 130 and a closed output pipe exits 141, both quietly.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

import click
import orjson

from refusals.model import LLMResponse
from refusals.providers import PROVIDERS, NormalizeError, normalize
from refusals.refusal import notice
from refusals.sanitize import sanitize
from refusals.transport.streams import StreamDecoder, sniff_framing

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a process killed by SIGPIPE (128 + 13): `| head` closed the
pipe before all output was written."""

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
READ_CHUNK = 64 * 1024

# Display bounds, in characters, for one table cell; `--json` carries the full text.
_SHORT_FIELD = 120  # model names, categories, provider values
_LONG_FIELD = 400  # explanations, error messages
_CONTENT_PREVIEW = 300
_NOTICE_DISPLAY = 2000

_BOM = b"\xef\xbb\xbf"
_BLANK = b"\xef\xbb\xbf \t\r\n"
_SSE_STARTS = (b"data:", b"event:", b":", b"id:", b"retry:")

# Finish reasons a user should notice at a glance.
_STYLES = {
    "refusal": "bold red",
    "content_filter": "bold magenta",
    "error": "bold yellow",
    "length": "yellow",
    "pause": "cyan",
}


class InputError(Exception):
    """Input that cannot be read as a body or stream: one line naming the problem."""


def verdict(response: LLMResponse, *, streamed: bool = False) -> dict[str, Any]:
    """The object `inspect --json` prints; its keys are a documented contract."""
    stop = response.stop_details
    category = None
    categories: list[str] = []
    if stop is not None:
        category = stop.category or (", ".join(stop.categories) if stop.categories else None)
        categories = list(stop.categories) or ([stop.category] if stop.category else [])
    error = response.error
    return {
        "provider": response.provider,
        "api": response.api,
        "streamed": streamed,
        "finish_reason": response.finish_reason.value,
        "raw_finish_reason": response.raw_finish_reason,
        "category": category,
        "categories": categories,
        "explanation": stop.explanation if stop is not None else None,
        "model": response.model,
        "served_by_fallback": response.served_by_fallback,
        "recommended_model": stop.recommended_model if stop is not None else None,
        "notice": notice(response),
        "content": response.content,
        "cut_off": response.cut_off,
        "altered": stop.altered if stop is not None else None,
        "error": None
        if error is None
        else {
            "kind": error.kind.value,
            "retryable": error.retryable,
            "code": error.code,
            "message": error.message,
        },
    }


class _Source:
    """An input file read in chunks, never more than `limit` bytes in all."""

    def __init__(self, file: IO[bytes], name: str, limit: int) -> None:
        self.file = file
        self.name = name
        self.limit = limit
        self.total = 0
        self.eof = False
        # read1 returns what a pipe has as soon as it has it; a plain read waits for all.
        self._read: Callable[[int], bytes] = getattr(file, "read1", file.read)

    def chunk(self) -> bytes:
        """The next bytes (b"" at the end); past `limit`, an `InputError`."""
        if self.eof:
            return b""
        try:
            data: bytes = self._read(READ_CHUNK)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}") from None
        if not data:
            self.eof = True
            return b""
        self.total += len(data)
        if self.total > self.limit:
            raise InputError(_too_big(self.limit))
        return data

    def rest(self) -> Iterator[bytes]:
        while chunk := self.chunk():
            yield chunk


def _too_big(limit: int) -> str:
    return f"more than {_size(limit)} ({limit} bytes); pass --max-bytes to read a larger recording"


def _size(count: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= factor and count % factor == 0:
            return f"{count // factor} {unit}"
    return f"{count} bytes"


def _open(path: str, limit: int) -> _Source:
    if path == "-":
        return _Source(sys.stdin.buffer, "<stdin>", limit)
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed by the caller, after the last read
    except FileNotFoundError:
        raise InputError(
            "no such file; give the path of a recorded body or stream, or - for standard input"
        ) from None
    except IsADirectoryError:
        raise InputError(
            "is a directory; give the path of a recorded body or stream, or - for standard input"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(file.fileno())
    except OSError as exc:
        file.close()
        raise InputError(f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        file.close()
        raise InputError(
            "is a directory; give the path of a recorded body or stream, or - for standard input"
        )
    # A regular file says its size up front: a sparse file of gigabytes fails at once.
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        file.close()
        raise InputError(_too_big(limit))
    return _Source(file, path, limit)


def _head(source: _Source) -> bytes:
    """The first bytes: enough past any blank lines to tell the framing (16 bytes of text
    show an SSE field name; 12 bytes an event-stream prelude), or all of a shorter input.
    Each chunk is looked at once, so a long run of blank lines costs linear time."""
    parts: list[bytes] = []
    total = 0
    text = 0  # bytes from the first one that is not blank
    while True:
        chunk = source.chunk()
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        text += len(chunk) if text else len(chunk.lstrip(_BLANK))
        if text >= 16 and total >= 12:
            break
    return b"".join(parts)


def _line_end(data: bytes) -> int:
    ends = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(ends) if ends else -1


def _classify(source: _Source, status: int | None) -> tuple[bool, bytes]:
    """Whether the input is a stream, and the bytes read so far.

    A stream is decided from its first bytes (SSE fields, an event-stream prelude, a first
    line that is a JSON object with more lines after it, an array whose first element is
    an object); a body is read whole, within the bound.
    """
    head = _head(source)
    if sniff_framing(head[:12]) == "event-stream":
        return True, head
    text = head.lstrip(_BLANK)
    if text.startswith(_SSE_STARTS):
        return True, head
    parts = [head]
    if text[:1] == b"{":
        # One JSON object per line is a recorded stream: the first line parses alone and
        # more follows it. A body's first line either is all of it or does not parse.
        end = _line_end(text)
        while end < 0 and (chunk := source.chunk()):
            parts.append(chunk)
            end = _line_end(chunk)
        if end < 0:
            return False, b"".join(parts)
        text = b"".join(parts).lstrip(_BLANK)
        end = _line_end(text)
        more = bool(text[end:].strip())
        while not more and (chunk := source.chunk()):
            parts.append(chunk)
            more = bool(chunk.strip())
        if more:
            try:
                orjson.loads(text[:end])
            except orjson.JSONDecodeError:
                return False, b"".join(parts)
            return True, b"".join(parts)
        return False, b"".join(parts)
    if text[:1] == b"[" and status is None:
        # Gemini streams without alt=sse as one JSON array of response objects; an error
        # body wrapped in an array comes with its status and is read as a body.
        after = text[1:].lstrip(_BLANK)
        while not after and (chunk := source.chunk()):
            parts.append(chunk)
            after = chunk.lstrip(_BLANK)
        # A bare `[` is an array stream cut off at once.
        return after[:1] == b"{" or not after, b"".join(parts)
    return False, head


def _body(data: bytes) -> Any:
    """What to hand to `normalize`: the decoded JSON document, so that it is parsed once,
    or the bytes (without a byte-order mark) when they are no JSON document."""
    if data.startswith(_BOM):
        data = data[3:]
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return data


def _no_events(response: LLMResponse) -> str:
    if response.error is not None and response.error.message:
        return response.error.message
    return "no stream events found; expected an SSE, event-stream or JSON-lines stream"


def _read_response(
    source: _Source, provider: str | None, status: int | None
) -> tuple[LLMResponse, bool, int | None]:
    streamed, data = _classify(source, status)
    if streamed:
        decoder = StreamDecoder(provider)
        decoder.feed(data)
        for chunk in source.rest():
            decoder.feed(chunk)
        decoder.close()
        response = decoder.response
        if decoder.events_seen == 0:
            raise InputError(_no_events(response))
        return response, True, decoder.verdict_index
    data = b"".join([data, *source.rest()])
    try:
        return normalize(_body(data), provider=provider, status=status), False, None
    except NormalizeError as exc:
        raise InputError(str(exc)) from None


def _cell(value: Any, limit: int = _SHORT_FIELD) -> str:
    return sanitize(" ".join(str(value).split()), single_line=True, max_chars=limit)


def _render(data: dict[str, Any], response: LLMResponse) -> None:
    # rich loads only for the table: --json and every error line go without it.
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    console = Console(highlight=False, soft_wrap=False)
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")

    def row(label: str, value: Any, style: str = "", limit: int = _SHORT_FIELD) -> None:
        if value is None or value == "":
            return
        # One line per cell: a newline in provider text must not forge a row.
        table.add_row(label, Text(_cell(value, limit), style=style))

    finish = data["finish_reason"]
    raw = data["raw_finish_reason"]
    shown = finish if raw in (None, finish) else f"{finish}  (provider said: {_cell(raw)})"
    row("verdict", shown, _STYLES.get(finish, "green"), _LONG_FIELD)
    source = data["provider"] or "unknown"
    if data["api"]:
        source += f" · {data['api']}"
    row("provider", source + ("  (streamed)" if data["streamed"] else ""))
    if data["streamed"]:
        index = data.get("verdict_event")
        row("verdict at", "no event carried one" if index is None else f"stream event {index}")
    row("model", data["model"])
    row("category", data["category"], limit=_LONG_FIELD)
    row("explanation", data["explanation"], limit=_LONG_FIELD)
    if data["altered"]:
        row("output", f"altered by the filter ({data['altered']}), the rest delivered")
    if response.error is not None:
        error = response.error
        status = f"HTTP {error.status} · " if error.status is not None else ""
        code = f" · {_cell(error.code)}" if error.code else ""
        retry = "retryable" if error.retryable else "not retryable"
        row("error", f"{status}{error.kind.value}{code} · {retry}", limit=_LONG_FIELD)
        if error.message and error.message != data["explanation"]:
            row("message", error.message, limit=_LONG_FIELD)
    if data["served_by_fallback"]:
        declined = ", ".join(_cell(m) for m in response.declined_models) or "the requested model"
        served = _cell(response.fallback_model or "a fallback model")
        row("fallback", f"{declined} declined; served by {served}", limit=_LONG_FIELD)
    elif data["recommended_model"]:
        row(
            "fallback",
            f"{_cell(data['recommended_model'])} recommended, not run",
            limit=_LONG_FIELD,
        )
    if response.cut_off:
        row("output", "partial output was cut off")
    row("content", data["content"], limit=_CONTENT_PREVIEW)
    console.print(table)
    if data["notice"]:
        console.print()
        text = sanitize(data["notice"], single_line=True, max_chars=_NOTICE_DISPLAY)
        console.print(Text(text, style=_STYLES.get(finish, "")))


def _dumps(result: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(result) + b"\n"
    except TypeError:
        # Text orjson refuses (a lone surrogate from a decoded dict, say): the standard
        # encoder escapes it, and the output stays one line of valid JSON.
        return json.dumps(result, separators=(",", ":")).encode() + b"\n"


def _fail(name: str, message: str) -> None:
    shown = sanitize(name, single_line=True, max_chars=_SHORT_FIELD)
    text = sanitize(message, single_line=True, max_chars=_NOTICE_DISPLAY)
    click.echo(f"refusals inspect: {shown}: {text}", err=True)
    sys.exit(EXIT_USAGE)


def _quiet_exit(code: int) -> None:
    """Exit now without the interpreter reporting a broken pipe on its last flush."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(code)


_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20}
_UNITS |= {"g": 1 << 30, "gib": 1 << 30}


class _ByteCount(click.ParamType[int]):
    """A byte count: digits, optionally with a K, M or G suffix (powers of 1024)."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        digits = text.rstrip("kmgib")
        unit = text[len(digits) :]
        if not digits.isdigit() or unit not in _UNITS or int(digits) == 0:
            self.fail(f"{value!r} is not a byte count (for example 1048576, 512K, 64M, 2G)")
        return int(digits) * _UNITS[unit]


@click.command("inspect", short_help="The verdict on a recorded body, error body or stream.")
@click.argument("path", metavar="PATH")
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS, case_sensitive=False),
    help="Wire format of the body; recognised from its shape when not given.",
)
@click.option(
    "--status",
    type=click.IntRange(100, 599),
    metavar="CODE",
    help="HTTP status the body came with; 400 or more reads it as an error body.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option(
    "--max-bytes",
    type=_ByteCount(),
    default=DEFAULT_MAX_BYTES,
    show_default="64M",
    metavar="N",
    help="Read at most N bytes of input (suffixes K, M, G).",
)
def inspect_command(
    path: str, provider: str | None, status: int | None, as_json: bool, max_bytes: int
) -> None:
    """Show what a recorded response says: finish reason, category, explanation, notice.

    PATH is a response body, HTTP error body or event stream saved to a file, or - to
    read standard input. Exit codes: 0 a verdict was printed, 2 the input could not be
    read as one, 130 interrupted, 141 the output pipe was closed.
    """
    name = "<stdin>" if path == "-" else path
    try:
        try:
            source = _open(path, max_bytes)
            try:
                response, streamed, verdict_event = _read_response(source, provider, status)
            finally:
                if path != "-":
                    source.file.close()
        except InputError as exc:
            _fail(name, str(exc))
            return
        result = verdict(response, streamed=streamed)
        if streamed:
            result["verdict_event"] = verdict_event
        if as_json:
            sys.stdout.buffer.write(_dumps(result))
            sys.stdout.flush()
        else:
            _render(result, response)
            sys.stdout.flush()
    except KeyboardInterrupt:
        click.echo("refusals inspect: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        _quiet_exit(EXIT_BROKEN_PIPE)
