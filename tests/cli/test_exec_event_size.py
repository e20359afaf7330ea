"""A long streamed answer costs its length in `--json` output, not its length squared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from refusals.mock import MockApp, MockServer

from ._exec_support import run_exec

PIECE = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ "  # 50 characters
PIECES = 2000  # a 100 kB answer in 2000 deltas


def _event(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"event": name, "data": data}


def long_stream() -> list[dict[str, Any]]:
    message: dict[str, Any] = {
        "id": "msg_long",
        "type": "message",
        "role": "assistant",
        "model": "mock-long",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": PIECE},
    }
    return [
        _event("message_start", {"type": "message_start", "message": message}),
        _event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        *[_event("content_block_delta", delta) for _ in range(PIECES)],
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9},
            },
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]


def test_json_events_carry_deltas_and_the_whole_text_once(tmp_path: Path) -> None:
    rules = tmp_path / "long.json"
    rules.write_text(json.dumps({"rules": [{"model": "mock-long", "events": long_stream()}]}))
    with MockServer(MockApp(scenarios_file=rules)) as server:
        run = run_exec(
            "--model",
            "anthropic:mock-long",
            "--base-url",
            server.base_url,
            "Write a lot",
            env={"ANTHROPIC_API_KEY": "k"},
        )
    assert run.exit_code == 0, run.stderr
    answer = PIECE * PIECES
    updates = run.of_type("item.updated")
    assert "".join(u["item"]["delta"] for u in updates) == answer
    (message,) = run.items("agent_message")
    assert message["text"] == answer
    # Each character goes out about twice (its delta, then the whole text), not 2000 times.
    assert len(run.stdout) < 3 * len(answer) + 200 * PIECES
