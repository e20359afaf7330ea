"""How `refusals chat` ends a turn that is not an answer: a filter, a refusal before any
output, a failed call (which `/retry` may resend), and what `/clear` and the mock default
do; in a pseudo-terminal against the mock server."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import orjson
import pexpect
import pytest

from refusals.chat.render import CUT_OFF_MARKER
from refusals.mock import MockServer
from refusals.mock.scenarios import PARTIAL_TEXT
from tests.chat._pty import TIMEOUT, Chat, chat, chat_env, one_line, user_texts
from tests.chat.test_chat import exec_notice


@pytest.fixture
def server() -> Iterator[MockServer]:
    with MockServer() as running:
        yield running


def test_a_content_filter_stop_marks_the_partial_output_and_prints_the_exec_filter_notice(
    server: MockServer,
) -> None:
    model = "anthropic:mock-filter-output"
    with chat(server.base_url, model) as session:
        session.say("describe it")
        session.expect(re.escape(PARTIAL_TEXT.strip()))
        session.expect(r"^" + re.escape(CUT_OFF_MARKER))
        found = session.expect(
            r"^The provider's content filter blocked this request[^\n]*switch models\."
        )
        session.prompt()
        session.say("/retry")
        session.expect(r"/retry: the last turn was blocked by a content filter")
        session.prompt()
        assert session.quit() == 0
    assert server.app.count() == 1
    assert one_line(found.group(0)) == exec_notice(server, model, "describe it", code=4)


def test_a_refusal_before_any_output_shows_the_notice_without_a_cut_off_marker(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-refusal") as session:
        session.say("do it")
        session.expect(r"^The model declined this request")
        session.expect(r"^/edit rephrases the refused prompt; /model NAME switches models\.$")
        session.prompt()
        assert CUT_OFF_MARKER not in session.text
        assert session.quit() == 0


def test_retry_after_a_failed_call_sends_the_prompt_again(server: MockServer) -> None:
    with chat(server.base_url, "anthropic:mock-server-error") as session:
        session.say("try this")
        session.expect(r"^error \(error\): Internal server error")
        session.expect(r"^/retry sends the prompt again\.$")
        session.prompt()
        failed_once = server.app.count()
        assert failed_once >= 1
        session.say("/model anthropic:mock-answer")
        session.prompt()
        session.say("/retry")
        session.expect(r"^Mock answer: try this$")
        session.prompt()
        assert session.quit() == 0
    assert server.app.count() == failed_once + 1
    # The failed turn was withdrawn: its prompt goes out once, in the retry only.
    assert user_texts(server.app.requests[-1].body) == ["try this"]


def test_retry_after_an_answer_replaces_it_rather_than_sending_it_along(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("once")
        session.expect(r"^Mock answer: once$")
        session.prompt()
        session.say("/retry")
        session.expect(r"^Mock answer: once$")
        session.prompt()
        assert session.quit() == 0
    assert server.app.count() == 2
    retried = server.app.requests[1].body
    assert user_texts(retried) == ["once"]
    assert "Mock answer" not in orjson.dumps(retried).decode()


def test_clear_starts_the_conversation_afresh(server: MockServer) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("remember this")
        session.expect(r"^Mock answer: remember this$")
        session.prompt()
        session.say("/clear")
        session.expect(r"conversation cleared")
        session.prompt()
        session.say("/history")
        session.expect(r"the conversation is empty")
        session.prompt()
        session.say("new start")
        session.expect(r"^Mock answer: new start$")
        session.prompt()
        assert session.quit() == 0
    assert user_texts(server.app.requests[-1].body) == ["new start"]


def test_without_a_model_or_a_key_the_chat_runs_on_the_offline_mock() -> None:
    env = chat_env()
    del env["ANTHROPIC_API_KEY"]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "refusals", "chat"],
        env=env,
        dimensions=(40, 120),
        timeout=TIMEOUT,
        encoding="utf-8",
    )
    try:
        session = Chat(child)
        session.expect(r"using the offline mock provider \(mock:answer\)")
        session.prompt()
        session.say("offline?")
        session.expect(r"^Mock answer: offline\?$")
        session.prompt()
        assert session.quit() == 0
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_a_bad_model_string_is_a_one_line_usage_error() -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "refusals", "chat", "--model", "nonsense"],
        env=chat_env(),
        dimensions=(40, 120),
        timeout=TIMEOUT,
        encoding="utf-8",
    )
    session = Chat(child)
    try:
        session.expect(r"^refusals chat: model 'nonsense' names no provider: [^\n]*\)$")
        child.expect(pexpect.EOF)
        session.raw += str(child.before)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 2
    assert "Traceback" not in session.text


def test_model_switches_the_next_turn_and_the_conversation_goes_with_it(
    server: MockServer,
) -> None:
    with chat(server.base_url, "anthropic:mock-answer") as session:
        session.say("first")
        session.expect(r"^Mock answer: first$")
        session.prompt()
        session.say("/model anthropic:mock-tool-then-answer")
        session.expect(r"^model anthropic:mock-tool-then-answer from the next turn on")
        session.prompt()
        session.say("/model")
        session.expect(r"^model anthropic:mock-tool-then-answer; /model PROVIDER:MODEL switches$")
        session.prompt()
        session.say("second")
        session.expect(r"^tool list_files")
        session.expect(r"^The tool returned: ")
        session.prompt()
        assert session.quit() == 0
    assert [r.model for r in server.app.requests] == [
        "mock-answer",
        "mock-tool-then-answer",
        "mock-tool-then-answer",
    ]
    switched = server.app.requests[1].body
    assert user_texts(switched) == ["first", "second"]
    assert "Mock answer: first" in orjson.dumps(switched).decode()
