"""`refusals exec`: run one agent task headless, on the shared turn loop.

Human mode: progress on stderr, the final answer on stdout. `--json`: one JSON event
per line on stdout (see docs/exec-events.md). A refusal or content-filter stop prints
its notice exactly as `refusals.notice` built it and exits 3 or 4; the exit codes are
those of `refusals.loop.outcome`.
"""

from __future__ import annotations

import asyncio
import functools
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

import click
import orjson

from refusals.cli._models import (
    SYSTEM_PROMPT,
    UsageError,
    command_options,
    make_client,
    make_workspace,
    model_options,
    resolve,
    start_metrics,
)
from refusals.loop.agent import DEFAULT_MAX_TURNS, Agent, TurnResult
from refusals.loop.events import (
    Event,
    FallbackReported,
    ItemCompleted,
    ItemStarted,
    RefusalReported,
    ThreadCompleted,
    ThreadStarted,
    TurnFailed,
)
from refusals.loop.outcome import EXIT_ERROR, EXIT_USAGE, Outcome
from refusals.loop.subagents import SubagentPolicy
from refusals.loop.workspace import write_atomically
from refusals.sanitize import sanitize


def _fail_usage(message: str) -> None:
    click.echo(f"refusals exec: {sanitize(message, single_line=True)}", err=True)
    sys.exit(EXIT_USAGE)


def read_prompt(prompt: str | None, stdin: IO[str]) -> str:
    if prompt is None or prompt == "-":
        if prompt is None and stdin.isatty():
            raise UsageError("no prompt given; pass it as an argument, or '-' to read stdin")
        # `echo TASK |` ends the prompt with a newline that is not part of the task.
        prompt = stdin.read().rstrip()
    if not prompt.strip():
        raise UsageError("the prompt is empty; pass the task as an argument or on stdin")
    bad = _SURROGATE.search(prompt)
    if bad is not None:
        # argv and stdin are decoded with surrogateescape: a lone surrogate is a byte
        # that was not UTF-8.
        byte = ord(bad.group()) - 0xDC00 if 0xDC80 <= ord(bad.group()) <= 0xDCFF else None
        what = f"byte 0x{byte:02x}" if byte is not None else "a lone surrogate"
        raise UsageError(
            f"the prompt is not valid UTF-8 ({what} at character {bad.start()}); "
            "convert it to UTF-8 (e.g. iconv -t UTF-8) and pass it again"
        )
    return prompt


_SURROGATE = re.compile("[\ud800-\udfff]")
# Valid JSON, but line separators to JavaScript and to str.splitlines: a JSONL reader
# that splits on them would cut an event in two.
_LINE_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


class JsonWriter:
    """One JSON object per line on stdout, each written whole and flushed."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        line = orjson.dumps(event.to_json()).decode()
        if not line.isascii():
            line = line.translate(_LINE_SEPARATORS)
        self.out.write(line + "\n")
        self.out.flush()


class HumanRenderer:
    """Progress on stderr, provider text sanitised; the answer is printed by the caller."""

    def __init__(self, err: IO[str]) -> None:
        self.err = err
        self.completed: ThreadCompleted | None = None

    def _say(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ThreadStarted):
            self._say(f"refusals exec: model {sanitize(event.model, single_line=True)}")
        elif isinstance(event, ItemStarted) and event.item.type == "subagent":
            task = sanitize(str(event.item.data.get("task", "")), max_chars=120, single_line=True)
            self._say(f"subagent: {task}")
        elif isinstance(event, ItemCompleted):
            self._item(event)
        elif isinstance(event, FallbackReported):
            line = fallback_line(event)
            if line is not None:
                self._say(line)
        elif isinstance(event, RefusalReported) and event.scope == "subagent":
            self._say("subagent stopped:")
            self._say(sanitize(event.notice))
        elif isinstance(event, TurnFailed):
            # A refusal or filter: the notice alone, verbatim (sanitize changes nothing
            # unless provider text in it carries control characters).
            if event.outcome in (Outcome.REFUSED, Outcome.CONTENT_FILTERED):
                self._say(sanitize(event.message))
            else:
                self._say(f"refusals exec: {event.outcome.code}: {sanitize(event.message)}")
        elif isinstance(event, ThreadCompleted):
            self.completed = event  # summarised after the answer is printed

    def summary(self) -> None:
        """The run's last line on stderr: outcome, exit code, calls and requests."""
        event = self.completed
        if event is not None:
            served = ""
            if event.outcome is Outcome.SUCCESS and event.served_by_fallback and event.served_by:
                served = f", served by {sanitize(event.served_by, single_line=True)}"
            self._say(
                f"refusals exec: {event.outcome.code} (exit {event.outcome.exit_code}), "
                f"{_count(event.num_turns, 'model call')}, {_count(event.requests, 'request')}"
                f"{served}"
            )

    def _item(self, event: ItemCompleted) -> None:
        item = event.item
        data = item.data
        status = str(data.get("status", ""))
        if item.type == "command_execution":
            command = sanitize(str(data.get("command", "")), max_chars=120, single_line=True)
            self._say(f"command: {command}")
            output = str(data.get("aggregated_output", ""))
            if data.get("exit_code") is None:
                self._say(f"  {status}: {sanitize(output, max_chars=200, single_line=True)}")
            else:
                lines = len(output.splitlines())
                self._say(f"  (exit {data['exit_code']}, {_count(lines, 'line')})")
        elif item.type == "file_change":
            for change in data.get("changes") or ():
                path = sanitize(str(change.get("path", "")), single_line=True)
                self._say(f"file: {change.get('kind')} {path}")
            if status != "completed":
                output = str(data.get("output", ""))
                self._say(f"  {status}: {sanitize(output, max_chars=200, single_line=True)}")
        elif item.type == "mcp_tool_call":
            arguments = data.get("arguments")
            text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
            shown = sanitize(text, max_chars=120, single_line=True)
            self._say(f"tool: {sanitize(str(data.get('tool')), single_line=True)} {shown}")
            error = data.get("error")
            if isinstance(error, dict):
                message = str(error.get("message", ""))
                self._say(f"  {sanitize(message, max_chars=200, single_line=True)}")
            else:
                result = data.get("result") or {}
                parts = result.get("content") or [] if isinstance(result, dict) else []
                output = "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
                self._say(f"  ({_count(len(output.splitlines()), 'line')})")
        elif item.type == "subagent":
            self._say(f"subagent: {data.get('status')}")


def fallback_line(event: FallbackReported) -> str | None:
    """One line for a fallback hop (from, to, why, how it went); None for a decline with
    no fallback, which the notice right after covers."""
    if event.outcome == "no_fallback":
        return None
    return sanitize(event.content, max_chars=400, single_line=True)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


async def _run(agent: Agent, prompt: str) -> TurnResult:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None
    # Ctrl-C cancels the run, which ends as `cancelled` with its events; a second one
    # while it winds down is ignored so that nothing is cut mid-write.
    interrupted: list[bool] = []

    def cancel_once() -> None:
        if not interrupted:
            interrupted.append(True)
            task.cancel()

    loop.add_signal_handler(signal.SIGINT, cancel_once)
    loop.add_signal_handler(signal.SIGTERM, cancel_once)
    try:
        return await agent.run(prompt)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        close = getattr(agent.client, "aclose", None)
        if close is not None:
            await close()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _system_prompt(replace: str | None, append: str | None) -> str:
    """The system prompt: the built-in one, or `replace`, then `append` after it."""
    system = _text_or_file("--system-prompt", replace) if replace is not None else SYSTEM_PROMPT
    if append is not None:
        system = f"{system}\n\n{_text_or_file('--append-system-prompt', append)}"
    if not system.strip():
        raise UsageError("--system-prompt: the system prompt is empty")
    return system


def _read_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema `--output-schema` names: a JSON object, or a usage error."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"--output-schema: {path} does not exist") from None
    except OSError as exc:
        raise UsageError(f"--output-schema: cannot read {path}: {exc.strerror}") from None
    try:
        schema = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--output-schema: {path} is not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema: {path} must hold a JSON Schema object")
    return schema


def _check_structured_output(client: object) -> None:
    clients = getattr(client, "clients", [client])
    for each in clients:
        if getattr(each, "wire", None) == "bedrock":
            raise UsageError(
                f"--output-schema: {getattr(each, 'model', 'bedrock')} has no structured "
                "output (Bedrock Converse); use another provider, or describe the JSON in "
                "the prompt"
            )


def _text_or_file(option: str, value: str) -> str:
    """`value`, or the UTF-8 text of the file `@PATH` names."""
    if not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{option}: {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{option}: {path} is a directory; name a text file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{option}: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{option}: cannot read {path}: {exc.strerror}") from None


def _cancelled_before_start(command: Callable[..., None]) -> Callable[..., None]:
    """Ctrl-C before the run started (reading stdin, starting up): exit 130, nothing to
    report (a run in progress handles Ctrl-C itself and reports it)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        # SIGTERM before the run starts is a Ctrl-C too (exit 130, nothing half-written),
        # not the default death (143); the run installs its own handler for both.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            command(*args, **kwargs)
        except KeyboardInterrupt:
            sys.exit(Outcome.CANCELLED.exit_code)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return run


@click.command("exec", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("prompt", required=False)
@model_options
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_TURNS,
    show_default=True,
    help="Model calls the task may make.",
)
@click.option("--allow-write", is_flag=True, help="Offer write_file and edit_file.")
@click.option(
    "--allow-commands",
    is_flag=True,
    help="Offer run_command, sandboxed by bubblewrap (workspace writable, no network).",
)
@command_options
@click.option(
    "--output-last-message",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the final answer to FILE (atomically; only when the task succeeded).",
)
@click.option(
    "--system-prompt",
    metavar="TEXT",
    help="Use TEXT as the system prompt instead of the built-in one (@FILE reads a file).",
)
@click.option(
    "--append-system-prompt",
    metavar="TEXT",
    help="Add TEXT after the system prompt (@FILE reads a file).",
)
@click.option(
    "--output-schema",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A JSON Schema the final answer must follow (structured output).",
)
@click.option("--no-stream", is_flag=True, help="Make whole calls instead of streaming.")
@click.option("--json", "as_json", is_flag=True, help="Write JSONL events on stdout.")
@_cancelled_before_start
def exec_command(
    *,
    prompt: str | None,
    model: str | None,
    base_url: str | None,
    max_turns: int,
    fallback_models: tuple[str, ...],
    fallback_scope: Literal["turn", "session"] | None,
    timeout: float | None,
    allow_write: bool,
    allow_commands: bool,
    allow_network: bool,
    unconfined_commands: bool,
    workspace: Path,
    output_last_message: Path | None,
    system_prompt: str | None,
    append_system_prompt: str | None,
    output_schema: Path | None,
    no_stream: bool,
    as_json: bool,
) -> None:
    """Run one agent task headless, stopping on a refusal with its notice.

    \b
    With --output-schema the answer is JSON; a model that declines the structured
    answer (OpenAI's typed refusal) is a refusal like any other.
    \b
    Exit codes: 0 success, 1 error or turn limit, 2 usage error, 3 refused,
    4 content-filtered, 124 a call ran over --timeout, 130 interrupted.
    \b
    Examples:
      refusals exec "Summarise README.md"               the offline mock, no key needed
      refusals exec -m anthropic:claude-opus-4-8 --json "List the TODOs" > events.jsonl
      echo "Fix the typo in setup.py" | refusals exec --allow-write -m openai:gpt-5.2 -
    """
    try:
        start_metrics()
        text = read_prompt(prompt, sys.stdin)
        if output_last_message is not None and not output_last_message.parent.is_dir():
            raise UsageError(
                f"--output-last-message: the directory of {output_last_message} does not exist"
            )
        system = _system_prompt(system_prompt, append_system_prompt)
        schema = _read_schema(output_schema) if output_schema is not None else None
        choice = resolve(model, fallback_models, fallback_scope, timeout, workspace)
        chosen, note = choice.model, choice.note
        root, unconfined = make_workspace(
            workspace,
            allow_write=allow_write,
            allow_commands=allow_commands,
            allow_network=allow_network,
            unconfined_commands=unconfined_commands,
        )
        # An `ask` rule of the policy has nobody to ask here: it stops.
        client = make_client(
            chosen,
            base_url,
            choice.fallbacks,
            choice.scope,
            choice.timeout,
            policy=choice.policy,
        )
        if schema is not None:
            _check_structured_output(client)
    except UsageError as exc:
        _fail_usage(str(exc))
        return
    if note is not None:
        click.echo(f"refusals exec: {note}", err=True)
    if unconfined is not None:
        click.echo(f"refusals exec: warning: {unconfined}", err=True)
    human = None if as_json else HumanRenderer(sys.stderr)
    sink = human if human is not None else JsonWriter(sys.stdout)
    agent = Agent(
        client,
        tools=root.tools(),
        system=system,
        max_turns=max_turns,
        stream=not no_stream,
        subagents=SubagentPolicy(),
        emit=sink,
        output_schema=schema,
        prices=choice.prices,
    )
    result = asyncio.run(_run(agent, text))
    if result.outcome is Outcome.SUCCESS:
        if not as_json:
            answer = result.text if not sys.stdout.isatty() else sanitize(result.text)
            sys.stdout.write(answer + ("" if answer.endswith("\n") else "\n"))
            sys.stdout.flush()
        if output_last_message is not None:
            try:
                write_atomically(output_last_message, result.text.encode("utf-8"))
            except OSError as exc:
                click.echo(
                    f"refusals exec: cannot write {output_last_message}: {exc.strerror}", err=True
                )
                sys.exit(EXIT_ERROR)
    if human is not None:
        human.summary()
    sys.exit(result.outcome.exit_code)
