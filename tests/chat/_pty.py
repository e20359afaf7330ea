"""Driving the real `refusals chat` in a pseudo-terminal, against a real mock server.

`Chat` wraps a `pexpect.spawn` of `python -m refusals chat`: `expect` waits (bounded)
for a regular expression in what the terminal shows, escape sequences stripped, and
`raw` keeps every byte the program wrote, for the assertions that nothing dangerous
reached the terminal.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pexpect

TIMEOUT = 20.0
"""Upper bound on any one wait; every wait ends by then, match or not."""
PROMPT = r"you>\s*$"

# What prompt_toolkit and rich write to draw: CSI, OSC, charset and keypad switches.
_DRAWING = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r"
)


def shown(raw: str) -> str:
    """What a reader sees of `raw`, roughly: the text without drawing sequences."""
    return _DRAWING.sub("", raw)


def one_line(text: str) -> str:
    """`text` with every run of whitespace made one space (terminal wrapping undone)."""
    return " ".join(text.split())


class Chat:
    """One running chat; `expect` moves a cursor through what it showed."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.raw = ""
        self._pos = 0

    @property
    def text(self) -> str:
        return shown(self.raw)

    def _read(self, wait: float) -> bool:
        try:
            self.raw += self.child.read_nonblocking(65536, wait)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def expect(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """Wait for `pattern` after the last match; AssertionError with the screen if not."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.MULTILINE)
        while True:
            found = regex.search(self.text, self._pos)
            if found is not None:
                self._pos = found.end()
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(min(0.2, remaining)):
                found = regex.search(self.text, self._pos)
                if found is not None:
                    self._pos = found.end()
                    return found
                raise AssertionError(f"{pattern!r} not shown; the screen:\n{self.text[-3000:]}")

    def prompt(self) -> None:
        """Wait until the input line is ready (an empty `you>` that stays empty)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            found = self.expect(PROMPT, max(deadline - time.monotonic(), 0.0))
            # A read may end inside the echo of a line just typed ("you>" then " text"):
            # only a prompt that nothing follows for a moment is the ready input line.
            self.settle(0.15)
            if not self.text[found.end() :].strip():
                return

    def say(self, line: str) -> None:
        """Type a line and press Enter."""
        self.child.send(line + "\r")

    def settle(self, seconds: float = 0.5) -> None:
        """Read what arrives for a little while (to show that nothing more does)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self._read(0.1):
            pass

    def quit(self) -> int:
        """Ctrl-D at the prompt; the exit status."""
        self.child.sendeof()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and self._read(0.2):
            pass
        self.child.close()
        status = self.child.exitstatus
        assert status is not None, f"the chat did not exit; the screen:\n{self.text[-2000:]}"
        return int(status)


def chat_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and key not in ("NO_COLOR", "FORCE_COLOR")
    }
    # No terminal answers prompt_toolkit's cursor position request inside pexpect.
    env.update(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", ANTHROPIC_API_KEY="test-key-h8")
    env.update(extra)
    return env


@contextmanager
def chat(
    base_url: str,
    model: str,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Chat]:
    """`refusals chat --model MODEL --base-url URL ARGS`, ended (killed if need be) after."""
    argv = ["-m", "refusals", "chat", "--model", model, "--base-url", base_url, *args]
    child = pexpect.spawn(
        sys.executable,
        argv,
        env=env or chat_env(),
        cwd=str(cwd) if cwd is not None else None,
        dimensions=(40, 120),
        timeout=TIMEOUT,
        encoding="utf-8",
        codec_errors="replace",
    )
    try:
        session = Chat(child)
        session.prompt()
        yield session
    finally:
        if child.isalive():
            child.terminate(force=True)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of an Anthropic request body (tool results not)."""
    texts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
    return texts


def all_text(body: dict[str, Any]) -> str:
    """Every string in a request body, joined: for "this never went out again" checks."""
    return orjson.dumps(body).decode()


ANSWER_TOOL_RESULTS: dict[str, Any] = {"after_tool_result": True, "scenario": "answer"}
"""A scenario rule to put first: a request whose last message is a tool result gets the
plain `answer` scenario (the later rules' tool call is not made again)."""


def anthropic_events(
    blocks: Sequence[dict[str, Any]], stop_reason: str = "end_turn"
) -> list[dict[str, Any]]:
    """An Anthropic Messages stream, as a scenario file's literal `events`.

    Each block is `{"type": "text", "text": ...}` or `{"type": "tool_use", "id": ...,
    "name": ..., "input": {...}}`.
    """
    events: list[dict[str, Any]] = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_h8",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-h8",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 1, "output_tokens": 0},
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        start: dict[str, Any]
        delta: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {
                "type": "input_json_delta",
                "partial_json": orjson.dumps(block["input"]).decode(),
            }
        events += [
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            ),
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            _event("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_body(text: str) -> dict[str, Any]:
    """A whole Anthropic Messages response with one text block."""
    return {
        "id": "msg_h8",
        "type": "message",
        "role": "assistant",
        "model": "claude-h8",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 5},
    }


def _event(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"event": name, "data": data}


def scenario_file(path: Path, rules: list[dict[str, Any]]) -> Path:
    """A JSON scenario file with `rules`, for `MockApp(scenarios_file=...)`."""
    path.write_bytes(orjson.dumps({"rules": rules}))
    return path
