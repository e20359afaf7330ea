"""`refusals proxy`: a refusal-aware gateway in front of any provider.

Point a tool's base URL at it (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`,
`GOOGLE_GEMINI_BASE_URL`...): it forwards each call as it is, reads every answer on the
fly, and answers a resend of a refused or filtered prompt with the recorded refusal
instead of sending it again. docs/proxy.md has the set-up for Codex, Claude Code and
Gemini CLI.

```python
from refusals.proxy import ProxyApp, ProxyServer, SQLiteStore, Upstream

app = ProxyApp([Upstream("openai", "https://api.openai.com")], SQLiteStore("blocked.db"))
with ProxyServer(app) as proxy:      # 127.0.0.1, a free port
    ...                             # base URL: proxy.base_url
```
"""

from __future__ import annotations

try:
    import aiohttp  # noqa: F401 - checked here so that the message says what to install
except ImportError as exc:  # pragma: no cover - exercised in a plain install
    raise ImportError(
        "refusals.proxy needs aiohttp, its upstream client: pip install 'refusals[proxy]'"
    ) from exc

from refusals.proxy.app import (
    BLOCKED_HEADER,
    DEFAULT_WINDOW,
    FALLBACK_HEADER,
    ProxyApp,
    Upstream,
    parse_upstream,
    wire_for_path,
)
from refusals.proxy.log import VerdictLog
from refusals.proxy.metrics import Metrics
from refusals.proxy.store import (
    Blocked,
    FingerprintStore,
    RedisStore,
    SQLiteStore,
    StoreError,
    default_state_dir,
    open_store,
)
from refusals.serving import BackgroundServer

__all__ = [
    "BLOCKED_HEADER",
    "DEFAULT_WINDOW",
    "FALLBACK_HEADER",
    "Blocked",
    "FingerprintStore",
    "Metrics",
    "ProxyApp",
    "ProxyServer",
    "RedisStore",
    "SQLiteStore",
    "StoreError",
    "Upstream",
    "VerdictLog",
    "default_state_dir",
    "open_store",
    "parse_upstream",
    "wire_for_path",
]


class ProxyServer(BackgroundServer):
    """A running proxy on `host:port` (port 0: a free one); use it as a context manager."""

    def __init__(
        self, app: ProxyApp, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
    ) -> None:
        self.app = app
        super().__init__(
            app, host, port, log_level, name="refusals-proxy", lifespan="on", own_headers=False
        )
