"""Placeholder: replaced by the wire-format implementation."""

from __future__ import annotations

from typing import Any

from refusals.model import LLMResponse
from refusals.providers._common import JsonObject, NormalizeError

API = "unknown"


def detect_provider(body: JsonObject) -> str | None:
    return None


def looks_like(body: JsonObject) -> bool:
    return False


def is_error(body: JsonObject) -> bool:
    return False


def parse_response(body: JsonObject, provider: str) -> LLMResponse:
    raise NormalizeError("not implemented")


def parse_error(body: Any, status: int | None, provider: str) -> LLMResponse:
    raise NormalizeError("not implemented")
