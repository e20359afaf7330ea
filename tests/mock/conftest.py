"""One mock server for the whole mock test package, its log emptied before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from refusals.mock import MockApp, MockServer


@pytest.fixture(scope="package")
def shared_server() -> Iterator[MockServer]:
    with MockServer(MockApp()) as server:
        yield server


@pytest.fixture
def server(shared_server: MockServer) -> MockServer:
    shared_server.app.reset()
    return shared_server
