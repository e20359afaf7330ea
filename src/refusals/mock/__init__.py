"""The mock provider: one loopback ASGI app that speaks every provider's wire format.

It serves every refusal, filter and fault scenario (`SCENARIOS`) on each provider's real
paths, and counts what reached it, so that "a refused request was sent exactly once" is
a one-line assertion. See docs/mock.md.

```python
from refusals.mock import MockApp, MockServer, assert_sent_once

with MockServer() as server:          # uvicorn on 127.0.0.1, a free port
    ...                               # point any SDK at server.base_url
    assert_sent_once(server.app, scenario="refusal")
```
"""

from __future__ import annotations

from refusals.mock.app import MAX_BODY_BYTES, MockApp, StreamReset
from refusals.mock.log import RecordedRequest, assert_not_resent, assert_sent_once
from refusals.mock.rules import ScenarioFileError
from refusals.mock.scenarios import MAGIC_REFUSAL_STRING, SCENARIOS
from refusals.mock.server import MockServer

__all__ = [
    "MAGIC_REFUSAL_STRING",
    "MAX_BODY_BYTES",
    "SCENARIOS",
    "MockApp",
    "MockServer",
    "RecordedRequest",
    "ScenarioFileError",
    "StreamReset",
    "assert_not_resent",
    "assert_sent_once",
]
