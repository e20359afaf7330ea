"""The interface every wire-format module offers, so that dispatch is checked by mypy.

`normalize` and the stream decoder pick a module (`anthropic`, `openai_chat`…) at run time
and call it through `WireFormat`; a module that lost a function or changed a signature is
then a type error at the call site, not an `AttributeError` on some rare body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from refusals.events import WireDecoder
from refusals.model import LLMResponse
from refusals.providers._common import JsonObject, Plain


class WireFormat(Protocol):
    """A provider module: detection, full-body parsing and a stream decoder."""

    # Read-only properties: a module's constants and classes then match covariantly (a
    # plain attribute would demand exactly `type[WireDecoder]`, not a subclass).
    @property
    def API(self) -> str:
        """The API family recorded on every response (`messages`, `chat.completions`…)."""
        ...

    @property
    def StreamReader(self) -> Callable[[str], WireDecoder]:
        """The incremental decoder, built with the provider name."""
        ...

    def detect_provider(self, body: JsonObject) -> str | None:
        """The provider a body's shape belongs to, or None when it is not this format."""
        ...

    def looks_like(self, body: JsonObject) -> bool:
        """Whether the body has this format's shape."""
        ...

    def is_error(self, body: JsonObject) -> bool:
        """Whether the body is an error body, even without an HTTP status."""
        ...

    def parse_response(self, body: JsonObject, provider: str) -> LLMResponse:
        """A full response body as an `LLMResponse`."""
        ...

    def parse_fast(self, data: bytes | str, provider: str | None) -> LLMResponse | None:
        """A well-typed body read through Structs: exactly `parse_response`'s result on
        what detection would pick, or None to take the dict path (see `_common`)."""
        ...

    def parse_plain(self, data: bytes | str, provider: str | None) -> Plain | None:
        """The verdict of `normalize` on the body, without building the response, when it
        is a plain answer; `NOT_PLAIN` when it is this format's but not plain, or not
        certainly (normalize then reads it); None only where `parse_fast` answers None,
        so that the next format is asked as `normalize` would ask it."""
        ...

    def parse_error(self, body: JsonObject | str, status: int | None, provider: str) -> LLMResponse:
        """An error body, or the text of a page that was not JSON, as an `LLMResponse`."""
        ...

    def detect_stream(self, name: str | None, payload: Any) -> str | None:
        """The provider when a stream's first event belongs to this format, else None."""
        ...
