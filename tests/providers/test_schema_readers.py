"""The one-schema readers: what fails a strict read fails it before any state changes, so
the lenient pass reads the event once, whole (no model, call or usage counted twice)."""

from __future__ import annotations

from refusals.events import ToolCallDelta
from refusals.providers import anthropic, gemini, ollama

# A lone surrogate escape: msgspec takes it, orjson (which reads raw JSON values) does not.
ODD = b'"\\ud800x"'


def test_a_gemini_call_with_odd_arguments_is_read_once() -> None:
    reader = gemini.StreamReader("gemini")
    chunk = (
        b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"q":'
        + ODD
        + b'}}}]},"finishReason":"STOP","index":0}],"modelVersion":"gemini-2.5-pro"}'
    )
    events = reader.feed(None, chunk)
    reader.close()
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(calls) == 1 and calls[0].name == "f"
    assert calls[0].arguments == '{"q":"\ufffdx"}'
    response = reader.response
    assert response.model == "gemini-2.5-pro"
    assert [c.name for c in response.tool_calls] == ["f"]


def test_an_ollama_call_with_odd_arguments_is_read_once() -> None:
    reader = ollama.StreamReader("ollama")
    line = (
        b'{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":'
        b'[{"function":{"name":"f","arguments":{"q":' + ODD + b"}}}]},"
        b'"done":true,"done_reason":"stop","eval_count":3}'
    )
    reader.feed(None, line)
    reader.close()
    response = reader.response
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("f", '{"q":"\ufffdx"}')]
    assert response.usage is not None and response.usage.output_tokens == 3


def test_an_anthropic_start_with_odd_iterations_is_read_once() -> None:
    reader = anthropic.StreamReader("anthropic")
    start = (
        b'{"type":"message_start","message":{"id":"msg_1","model":"claude-opus-4-8",'
        b'"usage":{"input_tokens":7,"iterations":[{"type":"message","model":' + ODD + b"}]}}}"
    )
    events = reader.feed("message_start", start)
    assert len(events) == 1
    usage = reader.response.usage
    assert reader.response.model == "claude-opus-4-8"
    assert usage is not None and usage.input_tokens == 7
    assert usage.iterations == [{"type": "message", "model": "\ufffdx"}]
