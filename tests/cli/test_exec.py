"""`refusals exec` end to end against a real mock server on 127.0.0.1: every scenario's
events and exit code, the event schema, usage errors, the workspace, and the mock default."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from refusals.cli.exec import HumanRenderer
from refusals.loop.events import TurnFailed
from refusals.loop.outcome import Outcome
from refusals.mock import SCENARIOS as CATALOGUE
from refusals.mock import MockApp, MockServer
from refusals.refusal import FALLBACK_DECLINED_SENTENCE
from tests.cli._exec_support import WIRES, ExecRun, exec_on, run_exec

ANTHROPIC = WIRES["anthropic"]

# scenario -> (exit code, the events that are not items, requests the run made)
SCENARIOS = {
    "answer": (0, ["thread.started", "turn.started", "turn.completed", "thread.completed"], 1),
    "tool-then-answer": (
        0,
        ["thread.started", "turn.started", "turn.completed", "thread.completed"],
        2,
    ),
    # parent, the child's answer, the parent's answer
    "subagent": (0, ["thread.started", "turn.started", "turn.completed", "thread.completed"], 3),
    "subagent-refusal": (
        0,
        # the child's decline (no fallback to go to) and its refusal, scoped to it
        [
            "thread.started",
            "turn.started",
            "fallback",
            "refusal",
            "turn.completed",
            "thread.completed",
        ],
        3,
    ),
    "slow": (0, ["thread.started", "turn.started", "turn.completed", "thread.completed"], 1),
    # two 429s, then the answer: the transport's retries, not the loop's
    "rate-limited": (
        0,
        ["thread.started", "turn.started", "turn.completed", "thread.completed"],
        3,
    ),
    **{
        name: (
            3,
            [
                "thread.started",
                "turn.started",
                "fallback",
                "refusal",
                "turn.failed",
                "thread.completed",
            ],
            1,
        )
        for name in (
            "refusal",
            "refusal-mid-stream",
            "refusal-recommended",
            "fallback-served",
            "fallback-declined",
        )
    },
    **{
        name: (
            4,
            [
                "thread.started",
                "turn.started",
                "fallback",
                "refusal",
                "turn.failed",
                "thread.completed",
            ],
            1,
        )
        for name in ("filter-output", "filter-prompt")
    },
    # the first call and three bounded continuations, then the run fails
    "length": (1, ["thread.started", "turn.started", "turn.failed", "thread.completed"], 4),
    "pause-turn": (1, ["thread.started", "turn.started", "turn.failed", "thread.completed"], 4),
    "overloaded": (1, ["thread.started", "turn.started", "turn.failed", "thread.completed"], 3),
    "server-error": (1, ["thread.started", "turn.started", "turn.failed", "thread.completed"], 3),
    "reset-mid-stream": (
        1,
        ["thread.started", "turn.started", "turn.failed", "thread.completed"],
        1,
    ),
    "truncated-stream": (
        1,
        ["thread.started", "turn.started", "turn.failed", "thread.completed"],
        1,
    ),
}
OUTCOMES = {0: "success", 1: "error", 3: "refused", 4: "content_filtered"}


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer) -> MockServer:
    server.app.reset()
    return server


def test_every_mock_scenario_is_covered() -> None:
    assert set(CATALOGUE) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_scenario_gives_its_documented_events_exit_code_and_request_count(
    mock: MockServer, scenario: str
) -> None:
    code, envelope, requests = SCENARIOS[scenario]
    run = exec_on(ANTHROPIC, mock.base_url, scenario, "Say hello.")
    assert run.exit_code == code, run.stderr
    assert [e["type"] for e in run.events if not e["type"].startswith("item.")] == envelope
    completed = run.events[-1]
    assert completed["outcome_code"] == OUTCOMES[code]
    assert completed["exit_code"] == code
    assert completed["is_error"] is (code != 0)
    assert completed["requests"] == requests == mock.app.count()


@pytest.mark.parametrize("scenario", ["refusal", "refusal-mid-stream", "filter-output"])
def test_a_refusal_event_comes_before_turn_failed_and_carries_the_same_notice(
    mock: MockServer, scenario: str
) -> None:
    run = exec_on(ANTHROPIC, mock.base_url, scenario, "Say hello.")
    types = [e["type"] for e in run.events]
    refusal = run.one("refusal")
    failed = run.one("turn.failed")
    assert types.index("refusal") == types.index("turn.failed") - 1
    assert refusal["notice"] == failed["error"]["message"]
    assert refusal["scope"] == "session"
    assert refusal["refused_item_id"] == run.one("turn.started")["prompt_item_id"]
    assert refusal["provider"] == "anthropic"
    assert refusal["original_model"] == f"mock-{scenario}"
    assert run.events[-1]["subtype"] != "success"
    assert run.events[-1]["stop_reason"] in ("refusal", "content_filter")


def test_partial_output_before_a_refusal_is_retracted_and_marked_cut_off(mock: MockServer) -> None:
    run = exec_on(ANTHROPIC, mock.base_url, "refusal-mid-stream", "Say hello.")
    fragments = [e["item"] for e in run.of_type("item.completed")]
    assert len(fragments) == 1 and fragments[0]["type"] == "agent_message"
    assert fragments[0]["cut_off"] is True and fragments[0]["retracted"] is True
    assert run.one("refusal")["retracted_item_ids"] == [fragments[0]["id"]]


def test_recommended_model_and_category_reach_the_refusal_event(mock: MockServer) -> None:
    run = exec_on(ANTHROPIC, mock.base_url, "refusal-recommended", "Say hello.")
    refusal = run.one("refusal")
    assert refusal["category"] is not None
    assert refusal["recommended_model"] not in (None, "mock-refusal-recommended")
    assert refusal["explanation"]
    assert refusal["recommended_model"] in refusal["notice"]


def test_human_mode_prints_the_answer_on_stdout_and_progress_on_stderr(mock: MockServer) -> None:
    run = exec_on(ANTHROPIC, mock.base_url, "answer", "Say hello.", as_json=False)
    assert run.exit_code == 0
    assert run.stdout == "Mock answer: Say hello.\n"
    assert "success (exit 0)" in run.stderr


def test_human_mode_prints_the_notice_verbatim_on_its_own_line(mock: MockServer) -> None:
    json_run = exec_on(ANTHROPIC, mock.base_url, "refusal", "Say hello.")
    human = exec_on(ANTHROPIC, mock.base_url, "refusal", "Say hello.", as_json=False)
    assert human.exit_code == 3
    assert human.stdout == ""
    assert json_run.one("refusal")["notice"] in human.stderr.splitlines()


def test_the_final_answer_is_written_to_output_last_message(
    mock: MockServer, tmp_path: Path
) -> None:
    target = tmp_path / "last.txt"
    run = exec_on(ANTHROPIC, mock.base_url, "answer", "Hi.", "--output-last-message", str(target))
    assert run.exit_code == 0
    assert target.read_text("utf-8") == "Mock answer: Hi."
    assert [p.name for p in tmp_path.iterdir()] == ["last.txt"]  # no temporary file left


def test_a_refused_run_writes_no_last_message(mock: MockServer, tmp_path: Path) -> None:
    target = tmp_path / "last.txt"
    run = exec_on(ANTHROPIC, mock.base_url, "refusal", "Hi.", "--output-last-message", str(target))
    assert run.exit_code == 3
    assert not target.exists()


def test_a_task_with_tool_calls_reads_the_workspace(mock: MockServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    run = exec_on(
        ANTHROPIC,
        mock.base_url,
        "tool-then-answer",
        "--workspace",
        str(tmp_path),
        "List the files.",
    )
    assert run.exit_code == 0
    # Codex's item type for a tool that is no command or file change: started, then done.
    [started] = [
        e["item"] for e in run.of_type("item.started") if e["item"]["type"] == "mcp_tool_call"
    ]
    [call] = run.items("mcp_tool_call")
    assert started["id"] == call["id"] and started["status"] == "in_progress"
    assert "result" not in started
    assert (call["server"], call["tool"], call["status"]) == ("refusals", "list_files", "completed")
    assert call["result"] == {
        "content": [{"type": "text", "text": "notes.txt\nsrc/app.py"}],
        "structured_content": None,
    }
    assert "error" not in call
    answer = run.of_type("item.completed")[-1]["item"]
    assert answer == {
        "id": answer["id"],
        "type": "agent_message",
        "text": "The tool returned: notes.txt\nsrc/app.py",
    }


def test_a_task_with_a_subagent_completes_with_the_childs_report(
    mock: MockServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    run = exec_on(ANTHROPIC, mock.base_url, "subagent", "--workspace", str(tmp_path), "Go.")
    assert run.exit_code == 0
    subagent = run.items("subagent")
    assert len(subagent) == 1
    assert subagent[0]["status"] == "completed"
    assert subagent[0]["text"] == (
        "Mock answer: List the files in the workspace and report what you find."
    )
    # The child's own items stay inside it; the parent's answer quotes its report.
    final = run.of_type("item.completed")[-1]["item"]
    assert final["type"] == "agent_message"
    assert final["text"].startswith('Subagent result: {"status":"completed"')


def test_the_prompt_is_read_from_stdin_with_a_dash(mock: MockServer) -> None:
    run = run_exec(
        "--model",
        ANTHROPIC.model("answer"),
        "--base-url",
        mock.base_url,
        "-",
        env=dict(ANTHROPIC.env),
        input="from stdin\n",
    )
    assert run.exit_code == 0
    assert run.of_type("item.completed")[-1]["item"]["text"] == "Mock answer: from stdin"


def test_no_model_and_no_key_runs_the_offline_mock_and_says_so() -> None:
    keys = dict.fromkeys(("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"), "")
    run = run_exec("Hello there.", env=keys, as_json=False)
    assert run.exit_code == 0
    assert run.stdout == "Mock answer: Hello there.\n"
    assert "using the offline mock provider (mock:answer)" in run.stderr


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--model", "nope:model", "hi"], {}, "unknown provider 'nope'"),
        (["--model", "anthropic:claude-x", "hi"], {"ANTHROPIC_API_KEY": ""}, "ANTHROPIC_API_KEY"),
        (["--model", "mock:answer", "   "], {}, "the prompt is empty"),
        (
            ["--model", "mock:answer", "--output-last-message", "/nonexistent/dir/last.txt", "hi"],
            {},
            "the directory of /nonexistent/dir/last.txt does not exist",
        ),
        (
            ["hi"],
            {"ANTHROPIC_API_KEY": "sk-secret-value"},
            "no --model given and ANTHROPIC_API_KEY",
        ),
        (["hi"], {"CO_API_KEY": "sk-secret-value"}, "no --model given and CO_API_KEY"),
        (["hi"], {"CEREBRAS_API_KEY": "sk-secret-value"}, "no --model given and CEREBRAS_API_KEY"),
    ],
)
def test_usage_errors_are_one_line_with_exit_code_2(
    args: list[str], env: dict[str, str], expected: str
) -> None:
    run = run_exec(*args, env=env, as_json=False)
    assert run.exit_code == 2
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("refusals exec: ")
    assert expected in lines[0]
    assert "sk-secret-value" not in run.stderr + run.stdout
    assert "Traceback" not in run.stderr


# On every wire: what a scenario may end as (Gemini and Bedrock block refusals as
# filters; a pause is Anthropic's alone, others answer).
ALLOWED_EXITS = {
    **{name: {0} for name in ("answer", "tool-then-answer", "subagent", "subagent-refusal")},
    **{name: {0} for name in ("slow", "rate-limited")},
    **{
        name: {3, 4}
        for name in (
            "refusal",
            "refusal-mid-stream",
            "refusal-recommended",
            "fallback-served",
            "fallback-declined",
        )
    },
    "filter-output": {4},
    "filter-prompt": {4},
    "length": {1},
    "pause-turn": {0, 1},
    **{
        name: {1} for name in ("overloaded", "server-error", "reset-mid-stream", "truncated-stream")
    },
}
OTHER_WIRES = sorted(set(WIRES) - {"anthropic"})
# Faults that cost the transport's backoff on every wire are covered once per wire.
QUICK = sorted(set(ALLOWED_EXITS) - {"slow", "overloaded", "server-error"})


@pytest.mark.parametrize("scenario", QUICK)
@pytest.mark.parametrize("wire_name", OTHER_WIRES)
def test_every_scenario_on_every_wire_ends_as_documented(
    mock: MockServer, wire_name: str, scenario: str
) -> None:
    run = exec_on(WIRES[wire_name], mock.base_url, scenario, "Say hello.")
    assert run.exit_code in ALLOWED_EXITS[scenario], (run.stderr, run.events[-3:])
    types = [e["type"] for e in run.events]
    assert types[:2] == ["thread.started", "turn.started"]
    assert types[-1] == "thread.completed"
    assert types[-2] == ("turn.completed" if run.exit_code == 0 else "turn.failed")
    assert run.events[-1]["exit_code"] == run.exit_code
    assert run.events[-1]["requests"] == mock.app.count()
    if run.exit_code in (3, 4):
        assert run.one("refusal")["notice"] == run.one("turn.failed")["error"]["message"]
        assert mock.app.count() == 1
    elif scenario != "subagent-refusal":
        assert run.of_type("refusal") == []


def fallback_run(server: MockServer, primary: str, fallback: str) -> ExecRun:
    return run_exec(
        "--model",
        ANTHROPIC.model(primary),
        "--fallback-model",
        ANTHROPIC.model(fallback),
        "--base-url",
        server.base_url,
        "Say hello.",
        env=dict(ANTHROPIC.env),
    )


def test_a_fallback_model_answers_and_the_declined_partial_output_is_retracted(
    mock: MockServer,
) -> None:
    run = fallback_run(mock, "refusal-mid-stream", "answer")
    assert run.exit_code == 0
    first, second = run.items("agent_message")
    assert first["cut_off"] is True and first["retracted"] is True
    assert second == {
        "id": second["id"],
        "type": "agent_message",
        "text": "Mock answer: Say hello.",
    }
    assert run.of_type("refusal") == []
    assert mock.app.count(model="mock-refusal-mid-stream") == 1
    assert mock.app.count(model="mock-answer") == 1
    assert run.events[-1]["requests"] == 2


def test_a_fallback_that_also_declines_says_so_in_the_notice(mock: MockServer) -> None:
    run = fallback_run(mock, "refusal", "refusal-mid-stream")
    assert run.exit_code == 3
    refusal = run.one("refusal")
    assert FALLBACK_DECLINED_SENTENCE in refusal["notice"]
    assert refusal["notice"] == run.one("turn.failed")["error"]["message"]
    assert mock.app.count(model="mock-refusal") == 1
    assert mock.app.count(model="mock-refusal-mid-stream") == 1


def test_a_fallback_to_the_same_model_is_never_asked(mock: MockServer) -> None:
    run = fallback_run(mock, "refusal", "refusal")
    assert run.exit_code == 3
    assert mock.app.count() == 1


def test_max_turns_ends_a_task_as_turn_limit_with_exit_1(mock: MockServer) -> None:
    run = exec_on(ANTHROPIC, mock.base_url, "tool-then-answer", "--max-turns", "1", "List.")
    assert run.exit_code == 1
    assert run.events[-1]["outcome_code"] == "turn_limit"
    assert run.events[-1]["subtype"] == "error_max_turns"
    assert mock.app.count() == 1


@pytest.mark.parametrize("scenario", ["answer", "refusal", "server-error", "filter-prompt"])
def test_the_api_key_appears_in_no_output(mock: MockServer, scenario: str) -> None:
    sentinel = "sk-ant-SENTINEL-h5-0123456789"
    for as_json in (True, False):
        run = run_exec(
            "--model",
            ANTHROPIC.model(scenario),
            "--base-url",
            mock.base_url,
            "Say hello.",
            env={"ANTHROPIC_API_KEY": sentinel},
            as_json=as_json,
        )
        assert run.exit_code in (0, 1, 3, 4)
        assert sentinel not in run.stdout + run.stderr


def test_human_mode_strips_terminal_controls_from_provider_text_only() -> None:
    err = io.StringIO()
    renderer = HumanRenderer(err)
    message = "The model declined this request: \x1b]0;pwned\x07no\x1b[2J. Rephrase it."
    renderer(TurnFailed(message, Outcome.REFUSED))
    assert err.getvalue() == "The model declined this request: no. Rephrase it.\n"
    clean = "The model declined this request: no. The request was not retried."
    renderer(TurnFailed(clean, Outcome.REFUSED))
    assert err.getvalue().splitlines()[-1] == clean
