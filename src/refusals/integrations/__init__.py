"""Refusal handling inside the libraries people already use.

One module per library, each importing its library only when used, each installed with
an extra: `httpx_transport` (httpx and httpx2, so every SDK built on them), `opentelemetry`
(`refusals[otel]`), `openai_agents` (`refusals[openai-agents]`), `pydantic_ai`
(`refusals[pydantic-ai]`) and `litellm` (`refusals[litellm]`). Each gives the same verdict
and the same notice (`refusals.notice`) as the rest of the library.
"""
