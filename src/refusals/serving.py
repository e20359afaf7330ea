"""An ASGI app on uvicorn in a background thread: what the mock and the proxy run on.

```python
with BackgroundServer(app) as server:   # 127.0.0.1, a free port
    httpx.get(server.base_url + "/...")
```

Importing this module also installs two filters on uvicorn's loggers that every server
of ours wants: query strings are cut from access lines (Gemini's `?key=` is a secret),
and the complaint about a response cut short on purpose is dropped.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import TracebackType
from typing import Any, Literal, Self

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 10.0

_INCOMPLETE = "ASGI callable returned without completing response."


class _ResetIsIntended(logging.Filter):
    """Drops uvicorn's complaint about a response cut short: `reset-mid-stream` does it,
    and the proxy does it when the upstream broke off."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _INCOMPLETE


logging.getLogger("uvicorn.error").addFilter(_ResetIsIntended())


class _NoQueryStrings(logging.Filter):
    """Cuts the query string from uvicorn's access lines: Gemini's `?key=` is a secret,
    and no other value there is worth a log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, mark, _ = args[2].partition("?")
            if mark:
                record.args = (*args[:2], f"{path}?[query omitted]", *args[3:])
        return True


logging.getLogger("uvicorn.access").addFilter(_NoQueryStrings())


class _StartupErrors(logging.Filter):
    """Holds back uvicorn's errors while it starts, so a failure is reported once, by us."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            self.messages.append(record.getMessage())
            return False
        return True


async def read_body(receive: Receive, declared: str, limit: int) -> bytes | None:
    """A request's whole body from ASGI `receive`; None when it is over `limit` bytes
    (`declared`, the Content-Length header or "", lets a large one be refused unread)."""
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (`localhost`, 127.0.0.0/8, `::1`)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def uvicorn_options(
    log_level: str, lifespan: Literal["on", "off"], *, own_headers: bool
) -> dict[str, Any]:
    """The `uvicorn.Config` options every server of ours runs with, whatever the app."""
    return {
        "log_level": log_level,
        "lifespan": lifespan,
        "access_log": log_level in ("info", "debug"),
        "timeout_graceful_shutdown": 2,
        # A gateway passes the upstream's `server` and `date` on: no second copy of its
        # own, and no X-Forwarded-For rewriting of who the client is.
        "server_header": own_headers,
        "date_header": own_headers,
        "proxy_headers": own_headers,
    }


class BackgroundServer:
    """`app` served on `host:port` (port 0: a free one); use it as a context manager."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        *,
        name: str = "refusals-server",
        lifespan: Literal["on", "off"] = "off",
        own_headers: bool = True,
    ) -> None:
        self.asgi = app
        self.host = host
        self._requested_port = port
        self._log_level = log_level
        self._name = name
        self._lifespan = lifespan
        self._own_headers = own_headers
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = port

    @property
    def base_url(self) -> str:
        """`http://HOST:PORT`, no trailing slash."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> Self:
        import uvicorn  # noqa: PLC0415 - loaded only when a server runs

        config = uvicorn.Config(
            self.asgi,
            host=self.host,
            port=self._requested_port,
            **uvicorn_options(self._log_level, self._lifespan, own_headers=self._own_headers),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=self._name, daemon=True)
        errors = _StartupErrors()
        logger = logging.getLogger("uvicorn.error")
        logger.addFilter(errors)
        try:
            self._thread.start()
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while not self._server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    self.stop()
                    reason = errors.messages[-1] if errors.messages else "it did not start"
                    raise RuntimeError(reason)
                time.sleep(0.01)
        finally:
            logger.removeFilter(errors)
        sockets = [s for server in self._server.servers for s in server.sockets]
        self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_SECONDS)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
