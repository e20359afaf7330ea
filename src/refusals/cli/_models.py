"""What `refusals exec` and `refusals chat` share: the model choice, the client, the prompt.

Both commands resolve `--model` the same way (the offline mock when no provider key is
configured, a usage error when one is but no model was named) and build their client
with the same fallback options, so that the two never disagree about what runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from refusals.transport.base import ModelClient

if TYPE_CHECKING:
    from refusals.loop.events import Price
    from refusals.loop.workspace import Workspace
    from refusals.transport.fallback import BlockPolicy, Confirm

__all__ = [
    "MOCK_DEFAULT",
    "SYSTEM_PROMPT",
    "UsageError",
    "choose_model",
    "command_options",
    "make_client",
    "make_workspace",
    "model_options",
    "provider_key_variables",
    "resolve",
]

MOCK_DEFAULT = "mock:answer"


def provider_key_variables() -> tuple[str, ...]:
    """Environment variables that mean the user has a provider configured: every key
    variable of every provider a client calls (`providers/registry.py`). With one set and
    no --model there is no safe guess of a model, so the command asks for one."""
    # The registry's package loads every wire format, which --help does not need.
    from refusals.providers.registry import VENDORS  # noqa: PLC0415 - see above

    return tuple(
        dict.fromkeys(name for row in VENDORS if row.wire is not None for name in row.key_env)
    )


SYSTEM_PROMPT = (
    "You are a careful agent working in a workspace directory. Use the tools offered to "
    "look at files (and, when allowed, to change them or run commands), then answer "
    "the task in a short final message."
)


class UsageError(Exception):
    """Bad input from the user: one line, exit code 2."""


def choose_model(model: str | None) -> tuple[str, str | None]:
    """The model to run, and a note for stderr when it was chosen for the user."""
    if model:
        return model, None
    configured = [name for name in provider_key_variables() if os.environ.get(name)]
    if configured:
        raise UsageError(
            f"no --model given and {configured[0]} is set; pass --model PROVIDER:MODEL "
            "(e.g. anthropic:claude-opus-4-8), or --model mock:answer for the offline mock"
        )
    return MOCK_DEFAULT, (
        f"no --model and no provider API key in the environment: using the offline mock "
        f"provider ({MOCK_DEFAULT}); pass --model PROVIDER:MODEL for a real one"
    )


DEFAULT_TIMEOUT = 600.0
"""Seconds one provider call may take in all (`--timeout`)."""


def make_client(
    model: str,
    base_url: str | None,
    fallbacks: tuple[str, ...],
    scope: Literal["turn", "session"],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    policy: BlockPolicy | None = None,
    confirm: Confirm | None = None,
) -> ModelClient:
    """The client for `model` with its fallback chain; a bad model string or a missing
    key is a `UsageError` (one line)."""
    # The clients (httpx and the providers) load only when a command runs.
    from refusals.transport.clients import ClientError, client_for  # noqa: PLC0415

    try:
        return client_for(
            model,
            base_url=base_url,
            fallbacks=fallbacks,
            fallback_scope=scope,
            timeout=timeout,
            policy=policy,
            confirm=confirm,
        )
    except ClientError as exc:
        raise UsageError(_for_the_command_line(str(exc))) from None


@dataclass(slots=True)
class Choice:
    """What a command runs, from its flags, then `refusals.toml` and the environment."""

    model: str
    note: str | None
    fallbacks: tuple[str, ...]
    scope: Literal["turn", "session"]
    timeout: float
    policy: BlockPolicy | None
    prices: dict[str, Price]


def resolve(
    model: str | None,
    fallbacks: tuple[str, ...],
    scope: Literal["turn", "session"] | None,
    timeout: float | None,
    workspace: Path,
) -> Choice:
    """The flags, with what they leave unset taken from the config files (a bad file is
    a `UsageError`), then the built-in defaults."""
    from refusals.cli._config import load_settings  # noqa: PLC0415

    settings = load_settings(workspace)
    chosen, note = choose_model(model or settings.model)
    used = [str(path) for path in settings.sources]
    if not model and os.environ.get("REFUSALS_MODEL"):
        used.insert(0, "REFUSALS_MODEL")
    if note is None and used:
        note = f"settings from {', '.join(used)} (flags override them)"
    return Choice(
        chosen,
        note,
        fallbacks or settings.fallback_models or (),
        scope or settings.fallback_scope or "turn",
        timeout or settings.timeout or DEFAULT_TIMEOUT,
        settings.policy,
        settings.prices,
    )


def _for_the_command_line(message: str) -> str:
    """A client error in the command line's terms: the library's keyword arguments are
    options (or nothing) here."""
    return (
        message.replace(" (or pass api_key=...)", "")
        .replace("pass base_url=...", "pass --base-url URL")
        .replace("base_url", "--base-url")
    )


_Command = TypeVar("_Command", bound=Callable[..., Any])

# Declared once so that exec and chat spell, default and explain them alike.
_MODEL_OPTIONS = (
    click.option("--model", "-m", help="PROVIDER:MODEL, e.g. anthropic:claude-opus-4-8."),
    click.option("--base-url", help="The provider's base URL (a proxy, a local server, the mock)."),
    click.option(
        "--fallback-model",
        "fallback_models",
        multiple=True,
        help="A model to try once if the primary refuses or is filtered (repeatable).",
    ),
    click.option(
        "--fallback-scope",
        type=click.Choice(["turn", "session"]),
        help="Whether a fallback holds for the turn or for the rest of the session "
        "(default: turn).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="How long one provider call may take in all, a stream of keep-alives too "
        f"(default: {DEFAULT_TIMEOUT:g}).",
    ),
    click.option(
        "--workspace",
        type=click.Path(file_okay=False, dir_okay=True, exists=True, path_type=Path),
        default=".",
        help="The directory the tools may touch (default: the current one).",
    ),
)


_COMMAND_OPTIONS = (
    click.option(
        "--allow-network",
        is_flag=True,
        help="Let run_command reach the network (the sandbox has none by default).",
    ),
    click.option(
        "--unconfined-commands",
        is_flag=True,
        help="Let run_command run without a sandbox when bubblewrap is missing "
        "(commands then see your files and network).",
    ),
)


def command_options(command: _Command) -> _Command:
    """Add `--allow-network` and `--unconfined-commands` (what `--allow-commands` runs in)."""
    for option in reversed(_COMMAND_OPTIONS):
        command = option(command)
    return command


def make_workspace(
    root: Path,
    *,
    allow_write: bool,
    allow_commands: bool,
    allow_network: bool = False,
    unconfined_commands: bool = False,
) -> tuple[Workspace, str | None]:
    """The tools' workspace, and a note for the user when commands run unconfined.

    `--allow-commands` runs them in bubblewrap; without it installed, only with
    `--unconfined-commands`, so that nobody hands a model an unconfined shell unawares.
    """
    from refusals.loop.sandbox import find_sandbox  # noqa: PLC0415
    from refusals.loop.workspace import Workspace  # noqa: PLC0415

    sandbox = find_sandbox(network=allow_network) if allow_commands else None
    note = None
    if allow_commands and sandbox is None:
        if not unconfined_commands:
            raise UsageError(
                "--allow-commands: no sandbox is available (bubblewrap, `bwrap`, is not "
                "installed or cannot run here), so commands would run unconfined, with your "
                "files, credentials on disk and network; install bubblewrap (apt-get "
                "install bubblewrap) or add --unconfined-commands to run them anyway"
            )
        note = (
            "run_command is NOT sandboxed (bubblewrap is not available): commands run with "
            "your account's files and network; only their environment is scrubbed"
        )
    workspace = Workspace(
        root, allow_write=allow_write, allow_commands=allow_commands, sandbox=sandbox
    )
    return workspace, note


def model_options(command: _Command) -> _Command:
    """Add `--model`, `--base-url`, `--fallback-model`, `--fallback-scope`, `--timeout`
    and `--workspace` to a command, in that order."""
    for option in reversed(_MODEL_OPTIONS):
        command = option(command)
    return command


def start_metrics() -> None:
    """Count responses and fallback hops as OpenTelemetry metrics when this process has a
    global meter provider (run under `opentelemetry-instrument`, or set up by a wrapper);
    otherwise nothing, at no import cost."""
    if "opentelemetry.metrics" not in sys.modules:
        return
    try:
        from refusals.integrations.opentelemetry import install_if_configured  # noqa: PLC0415
    except ImportError:
        return  # the API without the SDK: nothing records metrics anyway
    install_if_configured()
