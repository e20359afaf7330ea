"""pytest plugin (entry point `refusals`): fixtures that put the mock provider in a test.

- `mock_app`: a fresh `MockApp`, for in-process use through httpx's `ASGITransport`;
- `mock_server`: a running `MockServer` on 127.0.0.1 serving that same app.

```python
from refusals.mock import assert_sent_once

def test_a_refusal_is_not_resent(mock_server):
    run_my_agent(base_url=mock_server.base_url, model="mock-refusal")
    assert_sent_once(mock_server.app, scenario="refusal")
```

The plugin loads in every pytest run of an environment where `refusals` is installed, so
it imports nothing heavy until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from refusals.mock.app import MockApp
    from refusals.mock.server import MockServer


@pytest.fixture
def mock_app() -> MockApp:
    """A fresh mock provider app, with an empty request log."""
    from refusals.mock.app import MockApp  # noqa: PLC0415 - loaded only when used

    return MockApp()


@pytest.fixture
def mock_server(mock_app: MockApp) -> Iterator[MockServer]:
    """The `mock_app` served by uvicorn on 127.0.0.1 (a free port); stopped afterwards."""
    from refusals.mock.server import MockServer  # noqa: PLC0415 - loaded only when used

    with MockServer(mock_app) as server:
        yield server
