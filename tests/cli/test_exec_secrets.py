"""No credential given on the command line or in the environment reaches exec's output."""

from __future__ import annotations

import pytest

from refusals.providers._common import redact

from ._exec_support import run_exec


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "human"])
def test_a_password_in_the_base_url_is_never_printed(as_json: bool) -> None:
    run = run_exec(
        "--model",
        "anthropic:claude-x",
        "--base-url",
        "http://alice:hunter2-SENTINEL@127.0.0.1:9",
        "hi",
        env={"ANTHROPIC_API_KEY": "k"},
        as_json=as_json,
    )
    assert run.exit_code == 1
    assert "hunter2" not in run.stdout and "hunter2" not in run.stderr
    assert "http://alice:[redacted]@127.0.0.1:9" in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("at https://u:p4ss@host/v1 failed", "at https://u:[redacted]@host/v1 failed"),
        ("key key_0123456789abcdef01234567 denied", "key [redacted] denied"),
        ("http://host:8080/a@b", "http://host:8080/a@b"),
    ],
)
def test_url_passwords_and_key_hex_keys_are_redacted(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    ("model", "env", "message"),
    [
        ("anthropic:m", {}, "refusals exec: no API key for anthropic: set ANTHROPIC_API_KEY\n"),
        (
            "vllm:m",
            {},
            "refusals exec: vllm needs the server's URL: pass --base-url URL (the root plus "
            "/v1, e.g. http://localhost:8000/v1) or set VLLM_BASE_URL\n",
        ),
        (
            "azure:m",
            {"AZURE_OPENAI_API_KEY": "k"},
            "refusals exec: azure needs its endpoint: set AZURE_OPENAI_ENDPOINT "
            "(https://RESOURCE.openai.azure.com) or pass --base-url URL\n",
        ),
    ],
)
def test_client_errors_name_the_command_lines_options_not_the_librarys_arguments(
    model: str, env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "VLLM_BASE_URL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    run = run_exec("--model", model, "hi", env=env, as_json=False)
    assert run.exit_code == 2
    assert run.stderr == message
