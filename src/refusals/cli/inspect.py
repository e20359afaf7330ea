"""`refusals inspect`: the verdict on one recorded response body, stream or error body."""

from __future__ import annotations

import sys
from typing import IO, Any

import click
import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from refusals.cli._terminal import sanitize
from refusals.model import LLMResponse
from refusals.providers import PROVIDERS, NormalizeError, normalize
from refusals.refusal import notice
from refusals.transport.streams import decode_stream, sniff_framing

EXIT_USAGE = 2

# Finish reasons a user should notice at a glance.
_STYLES = {
    "refusal": "bold red",
    "content_filter": "bold magenta",
    "error": "bold yellow",
    "length": "yellow",
    "pause": "cyan",
}


def verdict(response: LLMResponse, *, streamed: bool = False) -> dict[str, Any]:
    """The object `inspect --json` prints; its keys are a documented contract."""
    stop = response.stop_details
    category = None
    if stop is not None:
        category = stop.category or (", ".join(stop.categories) if stop.categories else None)
    return {
        "provider": response.provider,
        "api": response.api,
        "streamed": streamed,
        "finish_reason": response.finish_reason.value,
        "raw_finish_reason": response.raw_finish_reason,
        "category": category,
        "explanation": stop.explanation if stop is not None else None,
        "model": response.model,
        "served_by_fallback": response.served_by_fallback,
        "recommended_model": stop.recommended_model if stop is not None else None,
        "notice": notice(response),
        "content": response.content,
    }


def stream_or_body(data: bytes, status: int | None = None) -> tuple[bool, Any]:
    """Whether a recorded file is a stream (SSE, event-stream, JSON lines or a streamed
    JSON array of response objects) and what to read: the bytes of a stream, or the body,
    already decoded when it was one JSON document, so that it is parsed only once."""
    if sniff_framing(data[:12]) == "event-stream":
        return True, data
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"data:", b"event:", b":", b"id:", b"retry:")):
        return True, data
    if head[:1] not in (b"{", b"["):
        return False, data
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        if head[:1] == b"[":
            return status is None, data  # an array stream cut off before its bracket
        # Not one JSON document: one JSON object per line is a recorded stream.
        try:
            orjson.loads(head.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            return False, data
        return True, data
    # Gemini streams without alt=sse as one JSON array of response objects; an error
    # body wrapped in an array comes with its status and is read as a body.
    if isinstance(value, list) and status is None and value and isinstance(value[0], dict):
        return True, data
    return False, value


def _no_events(response: LLMResponse) -> str:
    if response.error is not None and response.error.message:
        return response.error.message
    return "no stream events found; expected an SSE, event-stream or JSON-lines stream"


def _read(source: IO[bytes]) -> bytes:
    try:
        return source.read()
    except OSError as exc:
        raise click.ClickException(f"cannot read {source.name}: {exc.strerror}") from None


def _fail(path: str, message: str) -> None:
    click.echo(f"refusals inspect: {path}: {sanitize(message)}", err=True)
    sys.exit(EXIT_USAGE)


def _render(data: dict[str, Any], response: LLMResponse) -> None:
    console = Console(highlight=False, soft_wrap=False)
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")

    def row(label: str, value: Any, style: str = "") -> None:
        if value is None or value == "":
            return
        table.add_row(label, Text(sanitize(str(value)), style=style))

    finish = data["finish_reason"]
    raw = data["raw_finish_reason"]
    shown = finish if raw in (None, finish) else f"{finish}  (provider said: {raw})"
    row("verdict", shown, _STYLES.get(finish, "green"))
    source = data["provider"] or "unknown"
    if data["api"]:
        source += f" · {data['api']}"
    row("provider", source + ("  (streamed)" if data["streamed"] else ""))
    if data["streamed"]:
        index = data.get("verdict_event")
        row("verdict at", "no event carried one" if index is None else f"stream event {index}")
    row("model", data["model"])
    row("category", data["category"])
    row("explanation", data["explanation"])
    if response.error is not None:
        error = response.error
        status = f"HTTP {error.status} · " if error.status is not None else ""
        retry = "retryable" if error.retryable else "not retryable"
        row("error", f"{status}{error.kind.value} · {retry}")
        if error.message and error.message != data["explanation"]:
            row("message", error.message)
    if data["served_by_fallback"]:
        declined = ", ".join(response.declined_models) or "the requested model"
        served = response.fallback_model or "a fallback model"
        row("fallback", f"{declined} declined; served by {served}")
    elif data["recommended_model"]:
        row("fallback", f"{data['recommended_model']} recommended, not run")
    if response.cut_off:
        row("output", "partial output was cut off")
    content = data["content"]
    if content:
        preview = " ".join(content.split())
        row("content", preview if len(preview) <= 300 else preview[:297] + "...")
    console.print(table)
    if data["notice"]:
        console.print()
        console.print(Text(sanitize(data["notice"]), style=_STYLES.get(finish, "")))


@click.command("inspect", short_help="The verdict on a recorded body, error body or stream.")
@click.argument("source", type=click.File("rb"), metavar="PATH")
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
def inspect_command(
    source: IO[bytes], provider: str | None, status: int | None, as_json: bool
) -> None:
    """Show what a recorded response says: finish reason, category, explanation, notice.

    PATH is a response body, HTTP error body or event stream saved to a file, or - to
    read standard input.
    """
    name = source.name if isinstance(source.name, str) else "-"
    name = "<stdin>" if name in {"<stdin>", "-"} else name
    data = _read(source)
    streamed, body = stream_or_body(data, status)
    verdict_event = None
    try:
        if streamed:
            response, decoder = decode_stream(data, provider=provider)
            verdict_event = decoder.verdict_index
            if decoder.events_seen == 0:
                raise NormalizeError(_no_events(response))
        else:
            response = normalize(body, provider=provider, status=status)
    except NormalizeError as exc:
        _fail(name, str(exc))
        return
    result = verdict(response, streamed=streamed)
    if streamed:
        result["verdict_event"] = verdict_event
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(result) + b"\n")
        sys.stdout.flush()
    else:
        _render(result, response)
