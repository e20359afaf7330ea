"""Azure OpenAI streams: content-filter results chunk by chunk, the asynchronous filter, the
400 content_filter error inside a stream, and Azure's Responses streams.

The recorded streams are in tests/fixtures/azure/ (see tests/fixtures/SOURCES.md); streams
and full responses written from Microsoft's documentation are in tests/fixtures/azure/written/
(see its README.md). The shared checks are described in test_openai_chat_stream.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refusals import notice
from refusals.events import StreamError
from refusals.model import FinishReason
from refusals.providers import normalize
from tests.providers._support import (
    DONE,
    FILTERED,
    FIXTURES,
    INCOMPLETE,
    NEXT_STEP,
    Case,
    case_id,
    check_any_split,
    check_case,
    check_equivalent,
    check_fuzzed,
    check_truncations,
    decode,
    decode_with_events,
    sse_chunk,
)

POLICY_MESSAGE = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management "
    "policy. Please modify your prompt and retry. To learn more about our content filtering "
    "policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"
)

CASES = [
    Case(
        "azure/chat-stream-prompt-filter-results.chunks.txt",
        provider="azure",
        verdict_index=6,
        finish=FinishReason.STOP,
        raw="stop",
        content="Capital of Denmark.",
        partner="azure/written/chat-stream-prompt-filter-results.json",
    ),
    Case(
        "azure/written/chat-stream-content-filter.sse",
        provider="azure",
        verdict_index=2,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        category="hate",
        categories=("hate", "violence"),
        notice=f"{FILTERED} (categories: hate, violence). {NEXT_STEP}",
        partner="azure/written/chat-finish-content-filter.json",
    ),
    Case(
        "azure/written/chat-stream-async-filter.sse",
        provider="azure",
        verdict_index=10,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        category="sexual",
        notice=f"{FILTERED} (category: sexual). {NEXT_STEP}",
        cut_off=True,
        content="Color is a property of light and",
        partner="azure/written/chat-stream-async-filter.json",
    ),
    Case(
        "azure/written/chat-stream-async-flagged-after-stop.sse",
        provider="azure",
        verdict_index=9,
        finish=FinishReason.CONTENT_FILTER,
        raw="stop",
        category="custom_blocklists",
        notice=f"{FILTERED} (category: custom_blocklists). {NEXT_STEP}",
        cut_off=True,
        content="The secret word is written.",
        partner="azure/written/chat-stream-async-flagged-after-stop.json",
    ),
    Case(
        "azure/written/chat-stream-async-passing.sse",
        provider="azure",
        verdict_index=7,
        finish=FinishReason.STOP,
        raw="stop",
        content="Blue light scatters most.",
        partner="azure/written/chat-stream-async-passing.json",
    ),
    Case(
        "azure/written/chat-stream-error-content-filter.sse",
        provider="azure",
        verdict_index=0,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        category="hate",
        categories=("hate", "self_harm", "violence"),
        explanation=POLICY_MESSAGE,
        notice=f"{FILTERED} (categories: hate, self_harm, violence): the response was filtered "
        "due to the prompt triggering Azure OpenAI's content management policy. Please modify "
        "your prompt and retry. To learn more about our content filtering policies please read "
        f"our documentation: https://go.microsoft.com/fwlink/?linkid=2198766. {NEXT_STEP}",
        partner="azure/written/error-content-filter.json",
    ),
    Case(
        "azure/written/chat-stream-error-content-filter-after-text.sse",
        provider="azure",
        verdict_index=4,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        category="hate",
        categories=("hate", "self_harm", "violence"),
        explanation="The response was filtered due to the completion triggering Azure OpenAI's "
        "content management policy.",
        notice=f"{FILTERED} (categories: hate, self_harm, violence): the response was filtered "
        f"due to the completion triggering Azure OpenAI's content management policy. {NEXT_STEP}",
        cut_off=True,
        content="Here is how",
    ),
    Case(
        "azure/responses-content-filters-stream.chunks.txt",
        provider="azure",
        verdict_index=8,
        finish=FinishReason.STOP,
        raw="completed",
        content="Hello",
        partner="azure/written/responses-content-filters-stream.json",
    ),
    Case(
        "azure/written/responses-stream-content-filter-blocked.chunks.txt",
        provider="azure",
        verdict_index=7,
        finish=FinishReason.CONTENT_FILTER,
        raw="content_filter",
        category="violence",
        notice=f"{FILTERED} (category: violence). {NEXT_STEP}",
        cut_off=True,
        content="The attack began when",
        partner="azure/written/responses-content-filters-blocked.json",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_each_azure_stream_gives_its_verdict_on_the_event_that_carries_it(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.partner], ids=case_id)
def test_each_azure_stream_agrees_with_its_full_response(case: Case) -> None:
    check_equivalent(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_azure_stream_split_anywhere_decodes_as_in_one_piece(case: Case) -> None:
    check_any_split(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_azure_stream_cut_short_is_an_error_until_a_filter_was_seen(case: Case) -> None:
    check_truncations(case)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.data())
def test_cut_mutated_or_reshuffled_azure_streams_never_raise_nor_lose_a_filter(
    data: st.DataObject,
) -> None:
    check_fuzzed(data, CASES)


# Building streams in a test -----------------------------------------------------------------

SAFE = {"filtered": False, "severity": "safe"}


def azure_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    results: dict[str, Any] | None = None,
    *,
    annotation: bool = False,
) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if results is not None:
        choice["content_filter_results"] = results
    if annotation:
        choice["content_filter_offsets"] = {"check_offset": 1, "start_offset": 1, "end_offset": 9}
        body: dict[str, Any] = {"choices": [choice], "created": 0, "id": "", "model": ""}
    else:
        choice["delta"] = delta or {}
        body = {
            "choices": [choice],
            "created": 1767225600,
            "id": "chatcmpl-azure-test",
            "model": "gpt-4o-2024-11-20",
            "object": "chat.completion.chunk",
        }
    return sse_chunk(body)


def prompt_chunk(results: dict[str, Any], key: str = "prompt_filter_results") -> bytes:
    body = {"choices": [], "created": 0, "id": "", "model": "", key: [results]}
    return sse_chunk(body)


PROMPT_SAFE = {"prompt_index": 0, "content_filter_results": {"hate": SAFE, "violence": SAFE}}


# The asynchronous filter ------------------------------------------------------------------


def test_under_the_asynchronous_filter_a_stream_cut_after_the_stop_is_still_incomplete() -> None:
    # Annotations follow the model's stop; one of them may still block the answer.
    data = (FIXTURES / "azure/written/chat-stream-async-flagged-after-stop.sse").read_bytes()
    cut = data[: data.index(b'"custom_blocklists"')]
    cut = cut[: cut.rindex(b"\n\n") + 2]
    response, decoder, events = decode_with_events(cut)
    assert decoder.verdict_index == 8  # the stop, which the filter may still overrule
    assert response.finish_reason is FinishReason.ERROR
    assert [e.message for e in events if isinstance(e, StreamError)] == [INCOMPLETE]


def test_a_default_mode_stream_without_done_is_complete_after_its_finish() -> None:
    # The recording (one chunk per line) has no [DONE]; no annotation follows a finish here.
    response, _, events = decode_with_events(
        (FIXTURES / "azure/chat-stream-prompt-filter-results.chunks.txt").read_bytes()
    )
    assert response.finish_reason is FinishReason.STOP
    assert not [e for e in events if isinstance(e, StreamError)]


def test_a_block_after_the_stop_turns_the_stop_into_a_content_filter_on_its_annotation() -> None:
    path = FIXTURES / "azure/written/chat-stream-async-flagged-after-stop.sse"
    response, decoder = decode(path.read_bytes())
    assert decoder.verdict_index == 9
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.raw_finish_reason == "stop"
    filters = [d for d in response.decoded_details() if d.get("type") == "azure_content_filter"]
    assert filters == [
        {
            "type": "azure_content_filter",
            "source": "completion",
            "results": {"custom_blocklists": {"filtered": True, "ids": ["written_list"]}},
        }
    ]


def test_categories_flagged_by_several_annotations_are_all_named() -> None:
    data = prompt_chunk(PROMPT_SAFE)
    data += azure_chunk({"role": "assistant", "content": "Part one"}, results={})
    hate = {"hate": {"filtered": True, "severity": "medium"}, "violence": SAFE}
    violence = {"hate": SAFE, "violence": {"filtered": True, "severity": "high"}}
    data += azure_chunk(results=hate, annotation=True)
    data += azure_chunk({"content": " and two"})
    data += azure_chunk(results=violence, annotation=True)
    data += azure_chunk(finish="content_filter", results=violence, annotation=True) + DONE
    response, decoder = decode(data)
    assert decoder.verdict_index == 2  # the first flagged annotation
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert response.stop_details is not None
    assert response.stop_details.categories == ("hate", "violence")
    assert notice(response) == f"{FILTERED} (categories: hate, violence). {NEXT_STEP}"
    full = normalize(
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "content_filter",
                    "message": {"content": "Part one and two"},
                    "content_filter_results": {
                        "hate": {"filtered": True, "severity": "medium"},
                        "violence": {"filtered": True, "severity": "high"},
                    },
                }
            ],
            "prompt_filter_results": [PROMPT_SAFE],
        }
    )
    assert notice(full) == notice(response)
    assert full.content == response.content
    # The per-category results of all chunks, merged: what the full response reports.
    assert [d for d in response.decoded_details() if d.get("type") != "stop_details"] == [
        d for d in full.decoded_details() if d.get("type") != "stop_details"
    ]


def test_categories_flagged_after_the_stop_are_all_named_once_the_stream_ends() -> None:
    data = azure_chunk({"role": "assistant", "content": "Text"}, results={})
    data += azure_chunk({}, "stop")
    data += azure_chunk(results={"hate": {"filtered": True, "severity": "high"}}, annotation=True)
    data += azure_chunk(results={"sexual": {"filtered": True, "severity": "low"}}, annotation=True)
    response, decoder = decode(data + DONE)
    assert decoder.verdict_index == 2
    assert response.stop_details is not None
    assert (response.stop_details.category, response.stop_details.categories) == (
        "hate",
        ("hate", "sexual"),
    )


def test_an_annotation_that_only_detects_blocks_nothing() -> None:
    detected = {"protected_material_text": {"filtered": False, "detected": True}}
    data = azure_chunk({"role": "assistant", "content": "Lyrics"}, results={})
    data += azure_chunk(results=detected, annotation=True) + azure_chunk({}, "stop") + DONE
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.STOP
    assert response.cut_off is False


# Prompt results and filter errors -----------------------------------------------------------


def test_a_filtered_prompt_result_in_the_first_chunk_is_a_content_filter_on_that_chunk() -> None:
    prompt = {
        "prompt_index": 0,
        "content_filter_results": {"jailbreak": {"filtered": True, "detected": True}},
    }
    data = prompt_chunk(prompt) + azure_chunk({}, "content_filter", results={}) + DONE
    response, decoder = decode(data)
    assert decoder.verdict_index == 0
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    assert notice(response) == f"{FILTERED} (category: jailbreak). {NEXT_STEP}"


def test_the_older_prompt_annotations_name_is_read_like_prompt_filter_results() -> None:
    prompt = {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": True}}}
    data = prompt_chunk(prompt, key="prompt_annotations") + azure_chunk({}, "stop") + DONE
    response, decoder = decode(data)
    assert response.provider == "azure"
    assert decoder.verdict_index == 0
    assert response.finish_reason is FinishReason.CONTENT_FILTER
    full = normalize({"choices": [], "prompt_annotations": [prompt]})
    assert (full.provider, full.finish_reason) == ("azure", FinishReason.CONTENT_FILTER)


def test_a_filter_that_did_not_run_is_recorded_and_blocks_nothing() -> None:
    failed = {"error": {"code": "content_filter_error", "message": "The contents are not filtered"}}
    data = azure_chunk({"role": "assistant", "content": "Hi"}, results=failed)
    data += azure_chunk({}, "stop") + DONE
    response, _ = decode(data)
    assert response.finish_reason is FinishReason.STOP
    filters = [d for d in response.decoded_details() if d.get("type") == "azure_content_filter"]
    assert filters == [
        {
            "type": "azure_content_filter",
            "source": "completion",
            "error": {"code": "content_filter_error", "message": "The contents are not filtered"},
        }
    ]


def test_a_content_filter_error_in_the_stream_keeps_the_filter_results_of_the_error() -> None:
    path = FIXTURES / "azure/written/chat-stream-error-content-filter.sse"
    response, _ = decode(path.read_bytes())
    full = normalize((FIXTURES / "azure/written/error-content-filter.json").read_bytes())
    assert list(response.reasoning_details or []) == list(full.reasoning_details or [])
    assert response.error == full.error


def test_naming_azure_picks_the_chat_or_responses_decoder_from_the_first_event() -> None:
    chat, _ = decode(
        (FIXTURES / "azure/chat-stream-prompt-filter-results.chunks.txt").read_bytes(), "azure"
    )
    responses, _ = decode(
        (FIXTURES / "azure/responses-content-filters-stream.chunks.txt").read_bytes(), "azure"
    )
    assert (chat.api, responses.api) == ("chat.completions", "responses")
    assert chat.provider == responses.provider == "azure"
