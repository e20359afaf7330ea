"""`refusals chat`: talk to a model at the terminal, on the loop `refusals exec` runs.

The model, the mock default without a key, and the fallback options are resolved as
`exec` resolves them (both use `refusals.cli._models`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Literal

import click

from refusals.cli._models import command_options, model_options
from refusals.loop.agent import DEFAULT_MAX_TURNS
from refusals.loop.outcome import EXIT_CANCELLED, EXIT_USAGE
from refusals.sanitize import sanitize


def _fail_usage(message: str) -> None:
    click.echo(f"refusals chat: {sanitize(message, single_line=True)}", err=True)
    sys.exit(EXIT_USAGE)


@click.command("chat", context_settings={"help_option_names": ["-h", "--help"]})
@model_options
@click.option("--allow-write", is_flag=True, help="Offer write_file and edit_file (asked first).")
@click.option(
    "--allow-commands",
    is_flag=True,
    help="Offer run_command (asked first), sandboxed by bubblewrap.",
)
@command_options
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_TURNS,
    show_default=True,
    help="Model calls one turn may make.",
)
@click.option("--no-stream", is_flag=True, help="Make whole calls instead of streaming.")
@click.option(
    "--plain",
    is_flag=True,
    help="Print streamed text as it comes, without the live view and markdown.",
)
def chat_command(
    *,
    model: str | None,
    base_url: str | None,
    fallback_models: tuple[str, ...],
    fallback_scope: Literal["turn", "session"] | None,
    timeout: float | None,
    workspace: Path,
    allow_write: bool,
    allow_commands: bool,
    allow_network: bool,
    unconfined_commands: bool,
    max_turns: int,
    no_stream: bool,
    plain: bool,
) -> None:
    """Talk to a model at the terminal; a refusal is explained and never resent.

    \b
    After a refusal, /edit puts the prompt back to rephrase it and /model NAME
    switches models; /help lists every command. Ctrl-C cancels the turn in flight,
    Ctrl-D leaves.
    \b
    Examples:
      refusals chat                                the offline mock, no key needed
      refusals chat -m anthropic:claude-opus-4-8 --fallback-model openai:gpt-5.2
      refusals chat --allow-write --workspace ./project
    """
    # The chat's own imports (prompt_toolkit, rich, the clients) load only when it runs.
    from refusals.chat.approval import Approvals  # noqa: PLC0415
    from refusals.chat.prompt import Prompter  # noqa: PLC0415
    from refusals.chat.render import Renderer, make_console  # noqa: PLC0415
    from refusals.chat.session import ChatSession  # noqa: PLC0415
    from refusals.cli._models import (  # noqa: PLC0415
        SYSTEM_PROMPT,
        Choice,
        UsageError,
        make_workspace,
        resolve,
        start_metrics,
    )
    from refusals.cli._models import make_client as build_client  # noqa: PLC0415
    from refusals.loop.agent import Agent  # noqa: PLC0415
    from refusals.loop.subagents import SubagentPolicy  # noqa: PLC0415
    from refusals.model import FinishReason, LLMResponse  # noqa: PLC0415
    from refusals.transport.base import ModelClient  # noqa: PLC0415
    from refusals.transport.clients import ClientError, parse_model_string  # noqa: PLC0415

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        _fail_usage("chat needs a terminal; for scripts use `refusals exec PROMPT` (--json)")
        return
    start_metrics()

    def provider(name: str) -> str | None:
        try:
            return parse_model_string(name)[0]
        except ClientError:
            return None

    primary_provider: list[str | None] = []
    choices: list[Choice] = []
    prompter = Prompter()
    always: set[str] = set()

    async def confirm(blocked: LLMResponse, target: str) -> bool:
        # The policy says ask (refusals.toml): the user decides whether this prompt
        # goes to the next model; "always" holds for that model for the session.
        if target in always:
            return True
        kind = "declined" if blocked.finish_reason is FinishReason.REFUSAL else "was filtered"
        stop = blocked.stop_details
        category = stop.category if stop is not None else None
        why = f" (category: {sanitize(category, single_line=True)})" if category else ""
        answer = await prompter.approve(
            f"the model {kind}{why}; send this prompt to {sanitize(target, single_line=True)}?"
        )
        if answer == "always":
            always.add(target)
        return answer in ("yes", "always")

    def make_client(name: str) -> ModelClient:
        # --base-url is the server of the provider it was given with; a model of
        # another provider (after /model) reads its own environment.
        same = not primary_provider or provider(name) == primary_provider[0]
        choice = choices[0]
        try:
            return build_client(
                name,
                base_url if same else None,
                choice.fallbacks,
                choice.scope,
                choice.timeout,
                policy=choice.policy,
                confirm=confirm,
            )
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    try:
        choices.append(resolve(model, fallback_models, fallback_scope, timeout, workspace))
        chosen, note = choices[0].model, choices[0].note
        primary_provider.append(provider(chosen))
        root, unconfined = make_workspace(
            workspace,
            allow_write=allow_write,
            allow_commands=allow_commands,
            allow_network=allow_network,
            unconfined_commands=unconfined_commands,
        )
        first = make_client(chosen)
    except (UsageError, ValueError) as exc:
        _fail_usage(str(exc))
        return

    renderer = Renderer(make_console(), stream=not no_stream, live=not plain)
    tools = root.tools()
    approvals = Approvals(prompter.approve)

    def agent(client: ModelClient) -> Agent:
        return Agent(
            client,
            tools=tools,
            system=SYSTEM_PROMPT,
            max_turns=max_turns,
            stream=not no_stream,
            subagents=SubagentPolicy(),
            approve=approvals,
            prices=choices[0].prices,
        )

    session = ChatSession(
        chosen,
        first,
        make_client,
        renderer=renderer,
        prompter=prompter,
        agent=agent,
        fallback_scope=choices[0].scope,
    )
    if note is not None:
        renderer.hint(note)
    if unconfined is not None:
        renderer.warning(unconfined)
    try:
        asyncio.run(session.run())
    except KeyboardInterrupt:
        # Ctrl-C between a prompt and a turn (a moment); the session ends, quietly.
        sys.exit(EXIT_CANCELLED)
