"""Decode a response stream and stop reading the moment a refusal or filter is known.

    python examples/stop_at_verdict.py tests/fixtures/anthropic/stream-refusal-cyber.sse

With a live stream, pass `http_response.iter_bytes()` (httpx) or `response.iter_content()`
(requests) as `chunks`, and close the response when the function returns.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from refusals import LLMResponse, StreamDecoder, Verdict, notice, sanitize

BLOCKED = ("refusal", "content_filter")


def read_until_verdict(chunks: Iterable[bytes]) -> tuple[LLMResponse, bool]:
    """The response, and whether a refusal or filter verdict stopped the reading early.

    `return` leaves both loops at once (a `break` would only leave the inner one). The
    decoder is not closed after an early stop: closing reports the missing end of the
    stream as an error, and the verdict is already final. The notice is built from what
    arrived: details sent after the verdict (the rest of an OpenAI refusal text, which
    streams over several deltas; a Bedrock guardrail trace in the metadata event) are not
    in it. Read to the end instead when the full explanation matters more than the time.
    """
    decoder = StreamDecoder()
    for chunk in chunks:
        for event in decoder.feed(chunk):
            if isinstance(event, Verdict) and event.finish_reason in BLOCKED:
                return decoder.response, True
    decoder.close()
    return decoder.response, False


def file_chunks(path: str, size: int = 4096) -> Iterable[bytes]:
    with open(path, "rb") as file:
        while chunk := file.read(size):
            yield chunk


if __name__ == "__main__":
    response, stopped = read_until_verdict(file_chunks(sys.argv[1]))
    print(f"{response.finish_reason.value} (stopped early: {stopped})")
    text = notice(response)
    if text is not None:
        print(sanitize(text))
