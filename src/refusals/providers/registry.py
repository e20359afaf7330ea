"""Every provider name `refusals` knows: how its bodies are read and how it is reached.

One row per name serves `normalize` (the names it takes and the wire format each is read
as), `provider_for_url` (the hosts), and the clients (the wire they speak, the server,
the key). Adding an OpenAI-compatible vendor is one row here; see
docs/adding-a-provider.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["VENDORS", "Vendor", "Wire", "vendor"]

Wire = Literal["anthropic", "openai-chat", "openai-responses", "gemini", "bedrock", "cohere"]
"""The request formats the clients speak."""

Format = Literal[
    "anthropic", "openai-chat", "openai-responses", "gemini", "bedrock", "cohere", "ollama"
]
"""The wire-format packages that read responses (`refusals.providers.<format>`)."""


@dataclass(frozen=True, slots=True)
class Vendor:
    """One provider name: a `normalize(provider=...)` name, a `PROVIDER:` model prefix,
    or both."""

    name: str
    format: Format
    """The wire format its bodies, errors and streams are read as."""
    reads_as: str | None = None
    """The provider name its responses carry when that is another name's (a host of an
    OpenAI-compatible server is read as plain `openai`); None: its own, and `normalize`
    takes the name."""
    wire: Wire | None = None
    """The request format its client speaks; None: it can be read but not called."""
    base_url: str | None = None
    """The default server, as the official SDK takes it (None: one must be given)."""
    key_env: tuple[str, ...] = ()
    """Environment variables that hold its API key, the first set wins."""
    key_optional: bool = False
    base_url_env: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    """API hosts (a leading dot: any subdomain) that `provider_for_url` names it for."""

    @property
    def read_name(self) -> str:
        """The provider name `normalize` reads its bodies as."""
        return self.reads_as or self.name


VENDORS: tuple[Vendor, ...] = (
    Vendor(
        "anthropic",
        "anthropic",
        wire="anthropic",
        base_url="https://api.anthropic.com",
        key_env=("ANTHROPIC_API_KEY",),
        base_url_env=("ANTHROPIC_BASE_URL",),
        hosts=("api.anthropic.com",),
    ),
    Vendor(
        "openai",
        "openai-chat",
        wire="openai-chat",
        base_url="https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
        hosts=("api.openai.com",),
    ),
    Vendor(
        "openai-responses",
        "openai-responses",
        wire="openai-responses",
        base_url="https://api.openai.com/v1",
        key_env=("OPENAI_API_KEY",),
        base_url_env=("OPENAI_BASE_URL",),
    ),
    Vendor(
        "azure",
        "openai-chat",
        wire="openai-chat",
        key_env=("AZURE_OPENAI_API_KEY",),
        base_url_env=("AZURE_OPENAI_ENDPOINT",),
        hosts=(".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"),
    ),
    Vendor(
        "gemini",
        "gemini",
        wire="gemini",
        base_url="https://generativelanguage.googleapis.com",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url_env=("GOOGLE_GEMINI_BASE_URL",),
        hosts=("generativelanguage.googleapis.com",),
    ),
    Vendor(
        "vertex",
        "gemini",
        wire="gemini",
        key_env=("GOOGLE_OAUTH_ACCESS_TOKEN",),
        hosts=("aiplatform.googleapis.com",),
    ),
    Vendor(
        "bedrock",
        "bedrock",
        wire="bedrock",
        key_env=("AWS_BEARER_TOKEN_BEDROCK",),
        key_optional=True,
        hosts=(".amazonaws.com",),
    ),
    Vendor(
        "openrouter",
        "openai-chat",
        wire="openai-chat",
        base_url="https://openrouter.ai/api/v1",
        key_env=("OPENROUTER_API_KEY",),
        hosts=("openrouter.ai",),
    ),
    Vendor(
        "deepseek",
        "openai-chat",
        wire="openai-chat",
        base_url="https://api.deepseek.com/v1",
        key_env=("DEEPSEEK_API_KEY",),
        hosts=("api.deepseek.com",),
    ),
    Vendor(
        "xai",
        "openai-chat",
        wire="openai-chat",
        base_url="https://api.x.ai/v1",
        key_env=("XAI_API_KEY",),
        hosts=("api.x.ai",),
    ),
    Vendor(
        "groq",
        "openai-chat",
        wire="openai-chat",
        base_url="https://api.groq.com/openai/v1",
        key_env=("GROQ_API_KEY",),
        hosts=("api.groq.com",),
    ),
    Vendor(
        "mistral",
        "openai-chat",
        wire="openai-chat",
        base_url="https://api.mistral.ai/v1",
        key_env=("MISTRAL_API_KEY",),
        hosts=("api.mistral.ai",),
    ),
    Vendor(
        "cohere",
        "cohere",
        wire="cohere",
        base_url="https://api.cohere.com",
        # The SDK's variables: CO_API_KEY documented, COHERE_API_KEY accepted.
        key_env=("CO_API_KEY", "COHERE_API_KEY"),
        base_url_env=("CO_API_URL",),
        hosts=("api.cohere.com", "api.cohere.ai"),
    ),
    # Hosts of OpenAI-compatible servers: called with their prefix, read as plain OpenAI.
    Vendor(
        "together",
        "openai-chat",
        reads_as="openai",
        wire="openai-chat",
        base_url="https://api.together.xyz/v1",
        key_env=("TOGETHER_API_KEY",),
    ),
    Vendor(
        "ollama",
        "ollama",
        wire="openai-chat",
        base_url="http://localhost:11434/v1",
        key_env=("OLLAMA_API_KEY",),
        key_optional=True,
        base_url_env=("OLLAMA_BASE_URL",),
    ),
    Vendor(
        "cerebras",
        "openai-chat",
        reads_as="openai",
        wire="openai-chat",
        base_url="https://api.cerebras.ai/v1",
        key_env=("CEREBRAS_API_KEY",),
    ),
    Vendor(
        "vllm",
        "openai-chat",
        reads_as="openai",
        wire="openai-chat",
        key_env=("VLLM_API_KEY",),
        key_optional=True,
        base_url_env=("VLLM_BASE_URL",),
    ),
    Vendor(
        "openai-compatible",
        "openai-chat",
        reads_as="openai",
        wire="openai-chat",
        key_env=("OPENAI_COMPATIBLE_API_KEY",),
        key_optional=True,
        base_url_env=("OPENAI_COMPATIBLE_BASE_URL",),
    ),
    # The loopback mock provider speaks Anthropic's wire unless told otherwise.
    Vendor(
        "mock", "anthropic", reads_as="anthropic", wire="anthropic", base_url="http://mock.invalid"
    ),
)

_BY_NAME = {row.name: row for row in VENDORS}


def vendor(name: str) -> Vendor | None:
    """The row of a provider name (lower-case), or None."""
    return _BY_NAME.get(name)
