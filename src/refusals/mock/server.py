"""`MockServer`: the mock app on uvicorn in a background thread, for tests and the CLI.

```python
with MockServer() as server:        # 127.0.0.1, a free port
    httpx.post(server.base_url + "/v1/messages", ...)
```
"""

from __future__ import annotations

from refusals.mock.app import MockApp, StreamReset
from refusals.serving import BackgroundServer, Receive, Scope, Send


class _Served:
    """The app as uvicorn runs it: a `StreamReset` closes the socket, quietly."""

    def __init__(self, app: MockApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except StreamReset:
            return  # uvicorn closes a connection whose response did not complete


class MockServer(BackgroundServer):
    """A running mock on `host:port` (port 0: a free one); use it as a context manager."""

    def __init__(
        self,
        app: MockApp | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
    ) -> None:
        self.app = app if app is not None else MockApp()
        super().__init__(_Served(self.app), host, port, log_level, name="refusals-mock-server")
