"""Partial summaries merge in any order, and any grouping, to the same totals."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from refusals.scan import BoundedCounter, Problem, ScanRecord, Summary
from refusals.scan._outputs import same_model

FINISHES = ["stop", "length", "refusal", "content_filter", "error"]

records = st.builds(
    ScanRecord,
    source=st.sampled_from(["a.jsonl", "b.jsonl"]),
    line=st.integers(1, 50),
    id=st.none(),
    layout=st.just("jsonl"),
    provider=st.sampled_from(["anthropic", "openai", None]),
    model=st.sampled_from(["m1", "m2", "m3", None]),
    finish_reason=st.sampled_from(FINISHES),
    raw_finish_reason=st.none(),
    category=st.sampled_from(["cyber", "bio", None]),
    explanation=st.sampled_from(["Blocked.", "No.", "  Blocked. ", None, "x" * 300]),
    notice=st.none(),
    stage=st.sampled_from(["prompt", "output", None]),
    served_by_fallback=st.booleans(),
    recommended_model=st.none(),
    input_tokens=st.integers(0, 1000),
    output_tokens=st.integers(0, 1000),
)
problems = st.builds(
    Problem, st.sampled_from(["a.jsonl", "b.jsonl"]), st.integers(0, 9), st.just("bad")
)


def _small() -> Summary:
    # Capacities of 3 make the bounded parts overflow, where merging is hardest to get right.
    summary = Summary()
    summary.groups = BoundedCounter(summary.groups.width, 3)
    summary.explanations = BoundedCounter(1, 2)
    return summary


def _summarize(items: Sequence[ScanRecord | Problem]) -> Summary:
    summary = _small()
    for item in items:
        if isinstance(item, Problem):
            summary.add_problem(item)
        else:
            summary.add(item)
    return summary


def _tree_merge(parts: list[Summary], rng: random.Random) -> Summary:
    parts = list(parts)
    while len(parts) > 1:
        a = parts.pop(rng.randrange(len(parts)))
        b = parts.pop(rng.randrange(len(parts)))
        parts.append(a.merge(b))
    return parts[0]


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.one_of(records, problems), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=8),
    seed=st.integers(0, 2**32),
)
def test_merging_parts_in_any_order_equals_one_pass(
    items: list[ScanRecord | Problem], cuts: list[int], seed: int
) -> None:
    whole = _summarize(items)
    bounds = sorted({0, len(items), *(min(c, len(items)) for c in cuts)})
    parts = [_summarize(items[a:b]) for a, b in itertools.pairwise(bounds)]
    parts.append(_small())  # an empty part changes nothing
    merged = _tree_merge(parts, random.Random(seed))
    assert merged == whole
    assert merged.records == sum(isinstance(i, ScanRecord) for i in items)


@settings(max_examples=200, deadline=None)
@given(a=st.lists(records, max_size=20), b=st.lists(records, max_size=20))
def test_merge_is_commutative(a: list[ScanRecord], b: list[ScanRecord]) -> None:
    assert _summarize(a).merge(_summarize(b)) == _summarize(b).merge(_summarize(a))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.text(max_size=3), max_size=40), seed=st.integers(0, 2**32))
def test_a_full_counter_keeps_the_same_keys_whatever_the_order(keys: list[str], seed: int) -> None:
    shuffled = list(keys)
    random.Random(seed).shuffle(shuffled)
    first, second = BoundedCounter(1, 4), BoundedCounter(1, 4)
    for text in keys:
        first.add((text,), (1,))
    for text in shuffled:
        second.add((text,), (1,))
    assert first.to_json() == second.to_json()
    kept = sum(row[0] for _, row in first.items())
    assert kept + first.other[0] == len(keys)
    for key, row in first.items():
        assert row[0] == keys.count(key[0] or "")  # kept keys are counted exactly


def test_only_refused_and_filtered_records_count_tokens_and_explanations() -> None:
    base = {
        "source": "a",
        "line": 1,
        "id": None,
        "layout": "jsonl",
        "provider": "p",
        "model": "m",
        "raw_finish_reason": None,
        "category": None,
        "explanation": "Because.",
        "notice": None,
        "stage": "prompt",
        "served_by_fallback": False,
        "recommended_model": None,
        "input_tokens": 10,
        "output_tokens": 5,
    }
    summary = Summary()
    summary.add(ScanRecord(finish_reason="stop", **base))  # type: ignore[arg-type]
    summary.add(ScanRecord(finish_reason="refusal", **base))  # type: ignore[arg-type]
    assert summary.totals() == {
        "records": 2,
        "prompt_blocks": 1,
        "output_blocks": 0,
        "fallbacks": 0,
        "input_tokens": 10,
        "output_tokens": 5,
    }
    assert [key for key, _ in summary.explanations.items()] == [("refusal", None, "Because.")]


def test_same_model_tells_a_snapshot_from_another_model() -> None:
    assert same_model("claude-fable-5", "Claude-Fable-5 ")
    assert same_model("claude-opus-4-8", "claude-opus-4-8-20260101")
    assert not same_model("claude-opus-4-8", "claude-opus-4-8-mini")
    assert not same_model("claude-opus-4", "claude-opus-4-8")
    assert not same_model(None, "claude-opus-4-8")
