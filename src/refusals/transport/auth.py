"""Credentials: keys from each provider's conventional environment variables, and SigV4.

A key is read when a client is made and kept only inside a `Secret`, whose repr and str
never show it. A missing key is a `MissingCredentials` error naming the variable to set
(never a value). Bedrock requests are signed with AWS Signature Version 4 through
botocore, imported only when a Bedrock client is used (the `refusals[bedrock]` extra).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MIN_SCRUBBED_LENGTH", "MissingCredentials", "Secret", "SigV4Signer", "env_secret"]


MIN_SCRUBBED_LENGTH = 8
"""Credential values at least this long are scrubbed from messages by their exact value."""


class MissingCredentials(LookupError):
    """No key was given and none of the provider's environment variables is set."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A credential whose value never appears in a repr, a str or a log line."""

    value: str = field(repr=False)
    source: str = "argument"
    """Where it came from: `argument` or the environment variable's name."""

    def __repr__(self) -> str:
        return f"Secret(source={self.source!r})"

    __str__ = __repr__

    def scrub(self, text: str) -> str:
        """`text` with this secret's value replaced (for error messages from servers).

        Values shorter than `MIN_SCRUBBED_LENGTH` are left alone: scrubbing a demo key
        such as `k` would mangle every word holding that letter, and no real key is that
        short (the providers' key patterns are still redacted by `redact`).
        """
        if len(self.value) < MIN_SCRUBBED_LENGTH:
            return text
        return text.replace(self.value, "[redacted]")


def env_secret(
    explicit: str | None,
    names: Sequence[str],
    *,
    what: str,
    environ: Mapping[str, str] | None = None,
) -> Secret:
    """The explicit key, or the first of `names` set in the environment.

    Raises `MissingCredentials` with a one-line message naming the variables.
    """
    if explicit:
        return Secret(explicit)
    env = os.environ if environ is None else environ
    for name in names:
        value = env.get(name)
        if value:
            return Secret(value, name)
    wanted = " or ".join(names)
    raise MissingCredentials(f"no API key for {what}: set {wanted} (or pass api_key=...)")


def optional_env_secret(
    explicit: str | None, names: Sequence[str], environ: Mapping[str, str] | None = None
) -> Secret | None:
    """Like `env_secret`, for servers that need no key (Ollama, a local vLLM)."""
    try:
        return env_secret(explicit, names, what="", environ=environ)
    except MissingCredentials:
        return None


class SigV4Signer:
    """Signs Bedrock requests with the default AWS credential chain (botocore)."""

    def __init__(self, region: str, service: str = "bedrock") -> None:
        try:
            import botocore.session  # noqa: PLC0415 - optional, the `bedrock` extra
        except ImportError:
            raise MissingCredentials(
                "Bedrock needs botocore to sign requests: pip install 'refusals[bedrock]'"
            ) from None
        credentials = botocore.session.Session().get_credentials()
        if credentials is None:
            raise MissingCredentials(
                "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or AWS_BEARER_TOKEN_BEDROCK"
            )
        self._credentials: Any = credentials
        self.region = region
        self.service = service

    def __repr__(self) -> str:
        return f"SigV4Signer(region={self.region!r})"

    def secrets(self) -> list[str]:
        """The credential values, so that error messages can be scrubbed of them."""
        frozen = self._credentials.get_frozen_credentials()
        return [v for v in (frozen.secret_key, frozen.token) if v]

    def sign(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> dict[str, str]:
        """The headers to send: `headers` plus the SigV4 `Authorization` and date headers."""
        from botocore.auth import SigV4Auth  # noqa: PLC0415 - optional dependency
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415 - optional dependency

        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        SigV4Auth(self._credentials.get_frozen_credentials(), self.service, self.region).add_auth(
            request
        )
        return {k: str(v) for k, v in request.headers.items()}
