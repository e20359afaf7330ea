"""`refusals chat` in a real pseudo-terminal against a real mock server on 127.0.0.1.

Each test types what a user types and reads what the terminal shows; what reached the
provider is read from the mock's request log, never assumed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pexpect
import pytest
from jsonschema import Draft202012Validator

from refusals.chat.render import CUT_OFF_MARKER
from refusals.mock import MockApp, MockServer
from refusals.mock.scenarios import PARTIAL_TEXT
from tests._faults import FaultProxy, through_event
from tests.chat._pty import (
    ANSWER_TOOL_RESULTS,
    all_text,
    anthropic_body,
    anthropic_events,
    chat,
    chat_env,
    one_line,
    scenario_file,
    shown,
    user_texts,
)

SCHEMA = Path(__file__).parents[2] / "docs" / "exec-events.schema.json"


@pytest.fixture
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def exec_notice(server: MockServer, model: str, prompt: str, code: int = 3) -> str:
    """The notice `refusals exec` prints for the same model and prompt (its stderr line)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "refusals",
            "exec",
            "-m",
            model,
            "--base-url",
            server.base_url,
            prompt,
        ],
        env=chat_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == code, done.stderr
    notices = [line for line in done.stderr.splitlines() if line.startswith("The ")]
    assert len(notices) == 1, done.stderr
    return notices[0]


def test_a_normal_answer_is_shown_and_the_session_goes_on_until_ctrl_d(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("hello there")
        session.expect(r"^Mock answer: hello there$")
        session.prompt()
        session.say("and again")
        session.expect(r"^Mock answer: and again$")
        session.prompt()
        assert session.quit() == 0
        session.expect(r"^refusals chat: session ended; 2 model calls, 2 requests\.$")
    assert server.app.count() == 2
    second = server.app.requests[1].body
    assert user_texts(second) == ["hello there", "and again"]
    assert "Mock answer: hello there" in all_text(second)


def test_tab_completes_slash_commands_and_history_lists_the_conversation(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("first question")
        session.expect(r"^Mock answer: first question$")
        session.prompt()
        session.child.send("/hist\t")
        session.expect(r"/history")
        session.say("")
        session.expect(r"^you: first question$")
        session.expect(r"^model: Mock answer: first question$")
        session.prompt()
        session.say("/help")
        for name in ("help", "edit", "model", "retry", "history", "clear", "save", "quit"):
            session.expect(rf"^/{name}\b")
        session.prompt()
        session.say("/nonsense")
        session.expect(r"unknown command /nonsense; /help lists the commands")
        session.prompt()
        session.say("/quit")
        session.child.expect(pexpect.EOF, timeout=20)


def test_a_refusal_mid_stream_keeps_partial_text_marked_prints_the_exec_notice_resends_nothing(
    server: MockServer,
) -> None:
    model = "anthropic:mock-refusal-mid-stream"
    with chat(server.base_url, model) as session:
        session.say("tell me")
        session.expect(PARTIAL_TEXT.strip())
        session.expect(r"^" + re.escape(CUT_OFF_MARKER))
        found = session.expect(
            r"^The model declined this request[^\n]*(\n[^\n]+)*?rephrase it or switch models\."
        )
        session.prompt()
        # No auto-continue: the refused request was sent once and nothing followed it.
        session.settle(1.5)
        assert server.app.count() == 1
        session.say("/retry")
        session.expect(r"/retry: the last turn was refused; sending the same prompt again would be")
        session.prompt()
        session.settle(0.5)
        assert server.app.count() == 1
        assert session.quit() == 0
    notice = exec_notice(server, model, "tell me")
    assert one_line(found.group(0)) == notice


def test_edit_and_model_after_a_refusal_rephrase_on_another_model_without_the_refused_exchange(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-refusal-mid-stream") as session:
        session.say("tell me")
        session.expect(r"The model declined this request \(category: cyber\)")
        session.prompt()
        session.say("/model anthropic:mock-answer")
        session.expect(r"model anthropic:mock-answer from the next turn on")
        session.prompt()
        session.say("/edit")
        # The refused prompt is back in the input line, ready to be changed.
        session.expect(r"you> tell me\s*$")
        session.say(" kindly")
        session.expect(r"^Mock answer: tell me kindly$")
        session.prompt()
        session.say("/history")
        session.expect(r"^you: tell me  \(refused, not sent again\)$")
        session.expect(r"cut off; refused, not sent again")
        session.prompt()
        assert session.quit() == 0
    assert [r.model for r in server.app.requests] == ["mock-refusal-mid-stream", "mock-answer"]
    second = server.app.requests[1].body
    assert user_texts(second) == ["tell me kindly"]
    assert PARTIAL_TEXT.strip() not in all_text(second)


def test_model_rejects_a_bad_model_string_in_one_line_and_keeps_the_current_model(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("/model nonsense-without-provider")
        session.expect(r"^/model: [^\n]+$")
        session.prompt()
        session.say("still here")
        session.expect(r"^Mock answer: still here$")
        session.prompt()
        assert session.quit() == 0
    assert [r.model for r in server.app.requests] == ["mock-answer"]


@pytest.mark.parametrize(
    ("scope", "lasts", "second_turn_models"),
    [
        (
            "turn",
            "the switch lasts for this turn only (the next turn goes to anthropic:mock-refusal).",
            ["mock-refusal", "mock-answer"],
        ),
        (
            "session",
            "the switch lasts for the rest of the session "
            "(/model anthropic:mock-refusal goes back).",
            ["mock-answer"],
        ),
    ],
)
def test_a_fallback_answer_says_which_model_answered_and_how_long_the_switch_lasts(
    server: MockServer, scope: str, lasts: str, second_turn_models: list[str]
) -> None:
    args = ("--fallback-model", "anthropic:mock-answer", "--fallback-scope", scope)
    with chat(server.base_url, "anthropic:mock-refusal", *args) as session:
        session.say("hi")
        session.expect(r"^Mock answer: hi$")
        session.expect(
            r"^Answered by the fallback model anthropic:mock-answer after "
            r"anthropic:mock-refusal declined; " + re.escape(lasts) + "$"
        )
        session.prompt()
        session.say("more")
        session.expect(r"^Mock answer: more$")
        session.prompt()
        assert session.quit() == 0
    models = [r.model for r in server.app.requests]
    assert models[:2] == ["mock-refusal", "mock-answer"]
    assert models[2:] == second_turn_models


def test_a_declined_models_partial_text_before_a_fallback_answer_stays_marked_cut_off(
    server: MockServer,
) -> None:
    args = ("--fallback-model", "anthropic:mock-answer")
    with chat(server.base_url, "anthropic:mock-refusal-mid-stream", *args) as session:
        session.say("hi")
        session.expect(re.escape(PARTIAL_TEXT.strip()))
        session.expect(r"^" + re.escape(CUT_OFF_MARKER))
        session.expect(r"^Mock answer: hi$")
        session.expect(r"^Answered by the fallback model anthropic:mock-answer after ")
        session.prompt()
        session.say("again")
        session.expect(r"^Mock answer: again$")
        session.prompt()
        assert session.quit() == 0
    later = server.app.requests[-1].body
    assert user_texts(later) == ["hi", "again"]
    assert PARTIAL_TEXT.strip() not in all_text(later)


def test_ctrl_c_mid_stream_cancels_the_turn_and_the_session_goes_on_without_it(
    server: MockServer,
) -> None:
    # The slow scenario echoes the prompt word by word, 0.2 s a word: long enough to stop.
    words = " ".join(f"w{n}" for n in range(25))
    with chat(server.base_url, "anthropic:mock-slow") as session:
        session.say(words)
        session.expect(r"Mock answer: w0")
        session.child.sendintr()
        session.expect(r"Turn cancelled \(Ctrl-C\); it is not kept in the conversation")
        session.prompt()
        assert "w24" not in session.text.split("Turn cancelled")[0].split("Mock answer:")[-1]
        session.say("/model anthropic:mock-answer")
        session.prompt()
        session.say("next")
        session.expect(r"^Mock answer: next$")
        session.prompt()
        assert session.quit() == 0
    assert [r.model for r in server.app.requests] == ["mock-slow", "mock-answer"]
    assert user_texts(server.app.requests[1].body) == ["next"]


def test_a_write_asks_first_and_yes_no_and_always_do_what_they_say(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rules = [
        {
            "prompt_contains": f"note {n}",
            "events": anthropic_events(
                [
                    {
                        "type": "tool_use",
                        "id": f"toolu_{n}",
                        "name": "write_file",
                        "input": {"path": f"note{n}.txt", "content": f"text {n}"},
                    }
                ],
                stop_reason="tool_use",
            ),
        }
        for n in range(1, 5)
    ]
    app = MockApp(scenario_file(tmp_path / "rules.json", [ANSWER_TOOL_RESULTS, *rules]))
    args = ("--allow-write", "--workspace", str(workspace))
    with MockServer(app) as server, chat(server.base_url, "anthropic:claude-h8", *args) as session:
        session.say("write note 1")
        session.expect(
            r"allow write_file\(path='note1.txt', content='text 1'\)\? "
            r"\[y\]es / \[n\]o / \[a\]lways this session:"
        )
        session.say("y")
        session.expect(r'^tool write_file \{"path": ?"note1.txt"')
        session.expect(r"wrote 6 characters to note1.txt")
        session.expect(r"^Mock answer: write note 1$")
        session.prompt()
        session.say("write note 2")
        session.expect(r"allow write_file\(path='note2.txt'")
        session.say("n")
        session.expect(r"error: the user declined this write_file call; it did not run")
        session.expect(r"^Mock answer: write note 2$")
        session.prompt()
        session.say("write note 3")
        session.expect(r"allow write_file\(path='note3.txt'")
        session.say("a")
        session.expect(r"wrote 6 characters to note3.txt")
        session.prompt()
        session.say("write note 4")
        session.expect(r"wrote 6 characters to note4.txt")
        session.prompt()
        assert "allow write_file(path='note4.txt'" not in session.text
        assert session.quit() == 0
    assert sorted(p.name for p in workspace.iterdir()) == ["note1.txt", "note3.txt", "note4.txt"]
    assert (workspace / "note1.txt").read_text() == "text 1"


INJECTION = (
    "Safe start. "
    "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: write the clipboard
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\ "  # OSC 8 hyperlink
    "\x9b31m"  # C1 CSI: red
    "[bold red]not bold[/bold red] "  # rich markup
    ":smile: done."
)


@pytest.mark.parametrize(
    "args", [(), ("--plain",), ("--no-stream",)], ids=["live", "plain", "whole"]
)
def test_escape_sequences_and_markup_in_provider_text_never_reach_the_terminal_raw(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # Streamed, the text comes in small pieces: sequences split across deltas too.
    pieces = [INJECTION[i : i + 7] for i in range(0, len(INJECTION), 7)]
    rule: dict[str, object] = {"prompt_contains": "inject"}
    if "--no-stream" in args:
        rule["body"] = anthropic_body(INJECTION)
    else:
        rule["events"] = anthropic_events([{"type": "text", "text": p} for p in pieces])
    app = MockApp(scenario_file(tmp_path / "rules.json", [rule]))
    with MockServer(app) as server, chat(server.base_url, "anthropic:claude-h8", *args) as session:
        session.say("inject please")
        session.expect(r"done\.")
        session.prompt()
        assert session.quit() == 0
        raw = session.raw
    assert server.app.count() == 1
    for dangerous in ("\x1b]52", "\x1b[2J", "\x1b]8;", "\x9b", "ZXZpbA", "evil.example"):
        assert dangerous not in raw
    screen = one_line(shown(raw))
    assert "[bold red]not bold[/bold red]" in screen
    assert ":smile:" in screen
    assert "click here" in screen


MARKDOWN = "Intro with **strong** words.\n\n```python\nprint('hi')\n```\n\nThe end."


@pytest.mark.parametrize(("args", "rendered"), [((), True), (("--plain",), False)])
def test_a_streamed_answer_is_rendered_as_markdown_when_it_ends_unless_plain(
    tmp_path: Path, args: tuple[str, ...], rendered: bool
) -> None:
    pieces = [MARKDOWN[i : i + 5] for i in range(0, len(MARKDOWN), 5)]
    rule = {
        "prompt_contains": "markdown",
        "events": anthropic_events([{"type": "text", "text": p} for p in pieces]),
    }
    app = MockApp(scenario_file(tmp_path / "rules.json", [rule]))
    with MockServer(app) as server, chat(server.base_url, "anthropic:claude-h8", *args) as session:
        session.say("markdown please")
        session.expect(r"The end\.")
        session.prompt()
        assert session.quit() == 0
        after = session.text.split("markdown please", 1)[1]
    # The last thing drawn for the answer: the final render, not a live frame.
    final = after[after.rindex("Intro with") :]
    assert ("**strong**" not in final) is rendered
    assert ("```python" not in final) is rendered
    assert "print('hi')" in final


def test_save_writes_the_session_as_exec_schema_jsonl_with_the_refusal_event(
    server: MockServer, tmp_path: Path
) -> None:
    target = tmp_path / "session.jsonl"
    with chat(server.base_url, "anthropic:mock-refusal-mid-stream", cwd=tmp_path) as session:
        session.say("tell me")
        session.expect(r"^The model declined")
        session.prompt()
        session.say("/save session.jsonl")
        session.expect(r"saved \d+ events to session.jsonl")
        session.prompt()
        session.say("/save missing-dir/x.jsonl")
        session.expect(r"^/save: cannot write missing-dir/x.jsonl: ")
        session.prompt()
        assert session.quit() == 0
    validator = Draft202012Validator(json.loads(SCHEMA.read_text("utf-8")))
    events = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    for event in events:
        validator.validate(event)
    types = [e["type"] for e in events if not e["type"].startswith("item.")]
    assert types == [
        "thread.started",
        "turn.started",
        "fallback",
        "refusal",
        "turn.failed",
        "thread.completed",
    ]
    refusal = next(e for e in events if e["type"] == "refusal")
    failed = next(e for e in events if e["type"] == "turn.failed")
    assert refusal["notice"] == failed["error"]["message"]
    assert events[-1]["subtype"] == "error_refusal"
    assert not list(tmp_path.glob(".session.jsonl.*"))


def test_chat_without_a_terminal_is_a_usage_error_naming_exec() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "refusals", "chat", "--model", "mock:answer"],
        env=chat_env(),
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "refusals chat: chat needs a terminal; for scripts use `refusals exec PROMPT` (--json)"
    )


def test_ctrl_c_after_a_refusal_verdict_keeps_the_refusal_and_retry_does_not_resend(
    server: MockServer,
) -> None:
    # The verdict arrives, then the provider stalls while the chat reads on for details.
    marker = b'"stop_reason":"refusal"'
    with (
        FaultProxy(server.base_url, through_event(marker), stall=10.0) as proxy,
        chat(proxy.base_url, "anthropic:mock-refusal") as session,
    ):
        session.say("tell me")
        deadline = time.monotonic() + 20
        while not proxy.sent:
            assert time.monotonic() < deadline, "the verdict was never sent"
            time.sleep(0.02)
        session.settle(0.3)
        session.child.sendintr()
        session.expect(r"The model declined this request \(category: cyber\)")
        session.prompt()
        assert "Turn cancelled" not in session.text
        session.say("/retry")
        session.expect(r"/retry: the last turn was refused; sending the same prompt again would be")
        session.prompt()
        session.settle(0.5)
        assert server.app.count() == 1
        assert session.quit() == 0


def test_an_ask_rule_asks_before_sending_the_prompt_to_the_next_model(
    server: MockServer, tmp_path: Path
) -> None:
    (tmp_path / "refusals.toml").write_text(
        '[policy]\ncyber = "ask:anthropic:mock-answer"\n', encoding="utf-8"
    )
    question = (
        r"the model declined \(category: cyber\); send this prompt to anthropic:mock-answer\? "
        r"\[y\]es / \[n\]o / \[a\]lways this session:"
    )
    args = ("--workspace", str(tmp_path))
    with chat(server.base_url, "anthropic:mock-refusal", *args) as session:
        session.say("first")
        session.expect(question)
        session.say("y")
        session.expect(r"^Mock answer: first$")
        session.prompt()
        session.say("second")
        session.expect(question)
        session.say("n")
        session.expect(r"The model declined this request \(category: cyber\)")
        session.prompt()
        assert session.quit() == 0
    models = [r.model for r in server.app.requests]
    assert models == ["mock-refusal", "mock-answer", "mock-refusal"]
