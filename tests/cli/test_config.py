"""`refusals.toml`: defaults and a per-category policy for exec and chat, under flags and
the environment; a bad file is one line naming the file and the key (issue 20)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from refusals.mock import MockApp, MockServer

from ._exec_support import ExecRun, run_exec


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as running:
        yield running


@pytest.fixture
def mock(server: MockServer) -> MockServer:
    server.app.reset()
    return server


def exec_in(workspace: Path, *args: str, env: dict[str, str | None] | None = None) -> ExecRun:
    return run_exec("--workspace", str(workspace), *args, "Say hello.", env=env)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_workspace_file_gives_the_model_and_a_category_rule_its_fallback(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "refusals.toml",
        'model = "mock:refusal"\n'
        'fallback_models = ["mock:refusal-mid-stream"]\n'
        "[policy]\n"
        'cyber = "fallback:mock:answer"\n',
    )
    run = exec_in(tmp_path)
    assert run.exit_code == 0, run.stderr
    assert run.events[0]["model"] == "mock:refusal"
    hop = run.one("fallback")
    # The category's rule, not the ordered fallback_models, decided where it went.
    assert (hop["fallback_model"], hop["outcome"]) == ("mock:answer", "answered")
    assert run.events[-1]["requests"] == 2


def test_a_stop_rule_keeps_the_refusal_though_fallbacks_are_configured(
    tmp_path: Path, mock: MockServer
) -> None:
    write(tmp_path / "refusals.toml", '[policy]\ncyber = "stop"\n')
    run = run_exec(
        "--workspace",
        str(tmp_path),
        "--model",
        "anthropic:mock-refusal",
        "--fallback-model",
        "anthropic:mock-answer",
        "--base-url",
        mock.base_url,
        "Say hello.",
        env={"ANTHROPIC_API_KEY": "k"},
    )
    assert run.exit_code == 3
    assert run.one("fallback")["outcome"] == "no_fallback"
    assert mock.app.count(model="mock-answer") == 0
    assert mock.app.count(model="mock-refusal") == 1


def test_the_category_rule_wins_over_the_kind_rule_and_the_kind_over_default(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "refusals.toml",
        'model = "mock:refusal"\n[policy]\nrefusal = "stop"\ndefault = "fallback:mock:answer"\n',
    )
    assert exec_in(tmp_path).exit_code == 3  # cyber has no rule: `refusal` says stop
    write(
        tmp_path / "refusals.toml",
        'model = "mock:filter-output"\n'
        "[policy]\n"
        'refusal = "stop"\n'
        'default = "fallback:mock:answer"\n',
    )
    assert exec_in(tmp_path).exit_code == 0  # a filter: not `refusal`, so `default`


def test_ask_stops_in_exec_where_nobody_can_answer(tmp_path: Path) -> None:
    write(
        tmp_path / "refusals.toml", 'model = "mock:refusal"\n[policy]\ncyber = "ask:mock:answer"\n'
    )
    run = exec_in(tmp_path)
    assert run.exit_code == 3
    assert run.one("fallback")["outcome"] == "no_fallback"
    assert run.events[-1]["requests"] == 1


def test_flags_win_over_the_environment_and_the_environment_over_files(tmp_path: Path) -> None:
    write(tmp_path / "refusals.toml", 'model = "mock:refusal"\n')
    assert exec_in(tmp_path).events[0]["model"] == "mock:refusal"
    from_env = exec_in(tmp_path, env={"REFUSALS_MODEL": "mock:answer"})
    assert from_env.events[0]["model"] == "mock:answer"
    flagged = exec_in(
        tmp_path, "--model", "mock:filter-output", env={"REFUSALS_MODEL": "mock:answer"}
    )
    assert flagged.events[0]["model"] == "mock:filter-output"


def test_the_workspace_file_wins_key_by_key_over_the_users(tmp_path: Path) -> None:
    config_home = tmp_path / "xdg"
    write(
        config_home / "refusals" / "config.toml",
        'model = "mock:refusal"\ntimeout = 5\n[policy]\ncyber = "fallback:mock:answer"\n',
    )
    workspace = tmp_path / "ws"
    env: dict[str, str | None] = {"XDG_CONFIG_HOME": str(config_home)}
    # The user's file alone: its model and its policy.
    workspace.mkdir()
    alone = exec_in(workspace, env=env)
    assert alone.exit_code == 0 and alone.one("fallback")["fallback_model"] == "mock:answer"
    # The workspace's rule for cyber replaces the user's; the user's model still holds.
    write(workspace / "refusals.toml", '[policy]\ncyber = "stop"\n')
    both = exec_in(workspace, env=env)
    assert both.events[0]["model"] == "mock:refusal"
    assert both.exit_code == 3


def test_refusals_config_names_the_one_file_to_read(tmp_path: Path) -> None:
    write(tmp_path / "refusals.toml", 'model = "mock:refusal"\n')
    other = write(tmp_path / "elsewhere.toml", 'model = "mock:answer"\n')
    run = exec_in(tmp_path, env={"REFUSALS_CONFIG": str(other)})
    assert run.events[0]["model"] == "mock:answer"
    missing = exec_in(tmp_path, env={"REFUSALS_CONFIG": str(tmp_path / "nope.toml")})
    assert missing.exit_code == 2
    assert "REFUSALS_CONFIG names" in missing.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('modle = "mock:answer"\n', "unknown key 'modle' (did you mean 'model'?"),
        ('model = "answer"\n', "model must be a PROVIDER:MODEL string, not 'answer'"),
        ('fallback_scope = "forever"\n', 'fallback_scope must be "turn" or "session"'),
        ("timeout = -1\n", "timeout must be a positive number of seconds, not -1"),
        ('[policy]\ncyber = "fallbak"\n', "policy.cyber: 'fallbak' is not \"stop\""),
        ('[policy]\ncyber = "stop:mock:answer"\n', "policy.cyber: 'stop:mock:answer' is not"),
        ('[policy]\ncyber = "fallback:mock"\n', "names no model; write fallback:PROVIDER:MODEL"),
        ("model = \n", "not valid TOML"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path / "refusals.toml", text)
    run = run_exec("--workspace", str(tmp_path), "hi", as_json=False)
    assert run.exit_code == 2
    assert run.stderr.startswith(f"refusals exec: {path}: ")
    assert message in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_human_mode_says_which_files_were_read(tmp_path: Path) -> None:
    path = write(tmp_path / "refusals.toml", 'model = "mock:answer"\n')
    run = run_exec("--workspace", str(tmp_path), "hi", as_json=False)
    assert f"refusals exec: settings from {path} (flags override them)" in run.stderr


def test_a_price_table_gives_the_runs_cost_and_none_without_a_price_for_every_model(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "refusals.toml",
        'model = "mock:refusal"\n'
        'fallback_models = ["mock:answer"]\n'
        '[prices."mock:refusal"]\ninput = 1.0\noutput = 2.0\n'
        '[prices."mock:answer"]\ninput = 10.0\noutput = 20.0\n',
    )
    run = exec_in(tmp_path)
    assert run.exit_code == 0
    done = run.events[-1]
    usage = done["model_usage"]
    expected = (
        usage["mock:refusal"]["input_tokens"] * 1.0
        + usage["mock:refusal"]["output_tokens"] * 2.0
        + usage["mock:answer"]["input_tokens"] * 10.0
        + usage["mock:answer"]["output_tokens"] * 20.0
    ) / 1_000_000
    assert done["total_cost_usd"] == pytest.approx(expected)
    assert done["total_cost_usd"] > 0
    # Per model, as Claude Code's modelUsage[].costUSD: the two add up to the total.
    refused_cost = usage["mock:refusal"]["cost_usd"]
    assert refused_cost == pytest.approx(
        (usage["mock:refusal"]["input_tokens"] * 1.0 + usage["mock:refusal"]["output_tokens"] * 2.0)
        / 1_000_000
    )
    assert refused_cost + usage["mock:answer"]["cost_usd"] == pytest.approx(expected)
    write(
        tmp_path / "refusals.toml",
        'model = "mock:answer"\n[prices."mock:refusal"]\ninput = 1\noutput = 2\n',
    )
    partial = exec_in(tmp_path).events[-1]
    assert partial["total_cost_usd"] is None
    assert partial["model_usage"]["mock:answer"]["cost_usd"] is None
    write(tmp_path / "refusals.toml", 'model = "mock:answer"\n')
    assert exec_in(tmp_path).events[-1]["total_cost_usd"] is None


def test_a_bad_price_names_the_model_and_the_key(tmp_path: Path) -> None:
    write(tmp_path / "refusals.toml", '[prices."mock:answer"]\ninput = 1\noutptu = 2\n')
    run = run_exec("--workspace", str(tmp_path), "hi", as_json=False)
    assert run.exit_code == 2
    assert "prices.mock:answer: unknown key 'outptu' (did you mean 'output'?" in run.stderr
