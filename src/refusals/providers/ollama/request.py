"""Ollama's own chat endpoint, as gateways see it called (`POST /api/chat`).

The clients call Ollama through its OpenAI-compatible `/v1` (the registry's `ollama` row
speaks the Chat wire), so this folder builds no request.
https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion
"""

from __future__ import annotations

import re

from refusals.providers._request import Endpoint

ENDPOINTS = (Endpoint("ollama", re.compile(r"/api/chat$")),)
