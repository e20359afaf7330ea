"""Detection without a provider name: the module a body's first key points at is asked
first, and that choice changes only the speed.

Every fixture body and mutations of them (another format's key put first, first keys
swapped) read the same whichever module the first key is taken to point at, and the same
as with no module pointed at (the telling keys alone); each recorded body of a known
format starts with a key that points at the module that reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import providers
from refusals.providers import _DETECTION_ORDER, plain_verdict
from refusals.providers._protocol import WireFormat
from tests.providers._fast_support import decoded_fixtures, fixture_bodies, outcome

BODIES = fixture_bodies()
DECODED = decoded_fixtures()
_HEAD_KEYS = sorted({key.decode() for key in providers._BY_FIRST_KEY})


@contextmanager
def first_asked(module: WireFormat | None) -> Iterator[None]:
    """Detection with `module` taken for the one the first key points at."""
    saved = providers._by_head
    providers._by_head = lambda probe: module
    try:
        yield
    finally:
        providers._by_head = saved


def _reads(payload: bytes | str) -> list[object]:
    return [outcome(payload, None), plain_verdict(payload)]


def _same_whichever_module_is_first(payload: bytes | str) -> None:
    expected = _reads(payload)
    for module in (None, *_DETECTION_ORDER):
        with first_asked(module):
            assert _reads(payload) == expected, module


@pytest.mark.parametrize(("name", "data"), BODIES, ids=[name for name, _ in BODIES])
def test_every_fixture_reads_the_same_whichever_module_is_asked_first(
    name: str, data: bytes
) -> None:
    _same_whichever_module_is_first(data)
    _same_whichever_module_is_first(data.decode("utf-8", "replace"))


def test_recorded_bodies_start_with_a_key_of_the_module_that_reads_them() -> None:
    named = 0
    for name, data in BODIES:
        module = providers._by_head(data)
        if module is None:
            continue
        named += 1
        readers = [m for m in _DETECTION_ORDER if m.parse_fast(data, None) is not None]
        if readers:
            assert module in readers, name
    # Most bodies are named by their first key (the rest go to the telling keys).
    assert named > len(BODIES) // 2


def _reordered(body: dict[str, Any], first: str, value: Any) -> dict[str, Any]:
    return {first: value, **{k: v for k, v in body.items() if k != first}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(DECODED),
    st.sampled_from([*_HEAD_KEYS, "id", "object", "type", "model"]),
    st.sampled_from(["chatcmpl-1", "msg_1", "resp_1", "chat.completion", "message", "claude-x"]),
    st.booleans(),
)
def test_a_misleading_first_key_changes_no_verdict(
    named: tuple[str, Any], first: str, value: str, rotate: bool
) -> None:
    _, body = named
    if rotate and len(body) > 1:
        # The body's own keys in another order: another of them comes first.
        keys = list(body)
        moved = {k: body[k] for k in keys[1:] + keys[:1]}
    else:
        moved = _reordered(body, first, body.get(first, value))
    _same_whichever_module_is_first(orjson.dumps(moved))
