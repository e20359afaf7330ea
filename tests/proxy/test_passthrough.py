"""What passes through the proxy is what the provider sent: recorded bodies and streams
(tests/fixtures) byte for byte, gzip-coded or not, each stream event as it arrives; and
the verdict the proxy logs is the one `normalize` and the stream decoder give."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from refusals import normalize
from refusals.proxy import BLOCKED_HEADER, ProxyServer, Upstream
from refusals.serving import BackgroundServer
from refusals.transport.streams import decode_stream
from tests.proxy.conftest import FIXTURES, MakeProxy, Recorded

TIMEOUT = 10.0

# (fixture, path the call goes to, HTTP status the provider answered with)
CASES = [
    ("anthropic/stream-refusal-cyber.sse", "/v1/messages", 200),
    ("anthropic/vercel-refusal-cyber.json", "/v1/messages", 200),
    ("anthropic/stream-end-turn-recorded.sse", "/v1/messages", 200),
    ("openai-chat/refusal.json", "/v1/chat/completions", 200),
    ("openai-chat/stream-refusal.sse", "/v1/chat/completions", 200),
    ("openai-chat/stream-stop.sse", "/v1/chat/completions", 200),
    ("openai-responses/moderation-block-policy-flagged.json", "/v1/responses", 200),
    ("azure/chat-content-filter-results.json", "/openai/deployments/gpt-4o/chat/completions", 200),
    ("gemini/finish-safety-blocked.json", "/v1beta/models/gemini-2.5-flash:generateContent", 200),
    (
        "gemini/prompt-blocked-model-armor.json",
        "/v1beta/models/gemini-2.5-flash:generateContent",
        200,
    ),
]


def _proxy_for(recorded: BackgroundServer, make_proxy: MakeProxy, name: str) -> ProxyServer:
    return make_proxy(Upstream(name, recorded.base_url))


def _upstream_name(path: str) -> str:
    if path.startswith("/openai/"):
        return "azure"
    if "/models/" in path:
        return "gemini"
    return "anthropic" if path.endswith("/messages") else "openai"


def _log(proxy: ProxyServer, tmp_path: Path) -> list[dict[str, object]]:
    assert proxy.app.log is not None and proxy.app.log.flush()
    lines = (tmp_path / "verdicts.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


@pytest.mark.parametrize("coded", [False, True], ids=["identity", "gzip"])
@pytest.mark.parametrize(("fixture", "path", "status"), CASES, ids=[c[0] for c in CASES])
def test_recorded_answers_pass_through_byte_for_byte_with_the_library_verdict(
    recorded: tuple[Recorded, BackgroundServer],
    make_proxy: MakeProxy,
    tmp_path: Path,
    *,
    fixture: str,
    path: str,
    status: int,
    coded: bool,
) -> None:
    upstream, server = recorded
    upstream.serve(FIXTURES / fixture, status=status)
    upstream.gzip = coded
    name = _upstream_name(path)
    proxy = _proxy_for(server, make_proxy, name)
    streamed = upstream.media_type == "text/event-stream"
    body = {"model": "gpt-4o", "stream": streamed, "messages": [{"role": "user", "content": "hi"}]}
    direct = httpx.post(server.base_url + path, json=body, timeout=TIMEOUT)
    through = httpx.post(proxy.base_url + path, json=body, timeout=TIMEOUT)
    assert through.status_code == direct.status_code
    assert through.content == direct.content
    assert through.headers.get("content-encoding") == direct.headers.get("content-encoding")
    assert through.headers["request-id"] == "req_recorded"
    # The provider's own headers, once each: the proxy adds no `server` or `date` of its own.
    assert through.headers.get_list("server") == direct.headers.get_list("server") == ["uvicorn"]
    assert len(through.headers.get_list("date")) == 1
    provider = name if name != "openai" or not path.endswith("/responses") else "openai-responses"
    if upstream.media_type == "text/event-stream":
        expected = decode_stream(upstream.body, provider)[0]
    else:
        expected = normalize(upstream.body, provider, status=status)
    [line] = _log(proxy, tmp_path)
    assert line["finish_reason"] == expected.finish_reason.value
    assert line["resend_blocked"] is False
    blocked = expected.finish_reason.value in ("refusal", "content_filter")
    again = httpx.post(proxy.base_url + path, json=body, timeout=TIMEOUT)
    assert again.content == upstream.body  # a replay is the body, its coding undone
    assert (again.headers.get(BLOCKED_HEADER) == "true") is blocked
    assert len(upstream.calls) == (2 if blocked else 3)  # direct, through, and the replay's


def test_a_stream_event_is_forwarded_as_it_arrives(
    recorded: tuple[Recorded, BackgroundServer], make_proxy: MakeProxy
) -> None:
    upstream, server = recorded
    upstream.serve(FIXTURES / "anthropic/stream-end-turn-recorded.sse")
    upstream.pause_after_first = 1.0
    proxy = _proxy_for(server, make_proxy, "anthropic")
    started = time.perf_counter()
    with httpx.stream(
        "POST", proxy.base_url + "/v1/messages", json={"model": "m", "messages": []},
        timeout=TIMEOUT,
    ) as reply:  # fmt: skip
        chunks = reply.iter_raw()
        first = next(chunks)
        first_at = time.perf_counter() - started
        rest = b"".join(chunks)
        total = time.perf_counter() - started
    assert first.startswith(b"event: message_start")
    assert first_at < 0.5  # the first event did not wait for the rest
    assert total >= 1.0
    assert first + rest == upstream.body


def test_an_upstream_that_breaks_off_breaks_the_clients_stream_and_is_not_resent(
    make_proxy: MakeProxy, mock_url_reset: str, mock: Any
) -> None:
    proxy = make_proxy(Upstream("mock", mock_url_reset))
    body = {
        "model": "mock-reset-mid-stream",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(
            proxy.base_url + "/v1/messages", json=body, headers={"x-api-key": "k"},
            timeout=TIMEOUT,
        )  # fmt: skip
    # Bytes of the answer arrived, so the model ran and may have refused: a resend (an
    # SDK's retry of the broken stream, a tool's loop) is answered here, in the wire's
    # error shape, which no SDK retries.
    for _ in range(3):
        again = httpx.post(
            proxy.base_url + "/v1/messages", json=body, headers={"x-api-key": "k"},
            timeout=TIMEOUT,
        )  # fmt: skip
        assert again.status_code == 400
        assert again.headers[BLOCKED_HEADER] == "cut"
        assert "broke off after" in again.json()["error"]["message"]
    assert mock.app.count() == 1


@pytest.fixture
def mock_url_reset(mock: object) -> str:
    return str(mock.base_url)  # type: ignore[attr-defined]
