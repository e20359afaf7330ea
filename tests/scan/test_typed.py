"""The typed path (msgspec envelopes, bodies to normalize as bytes) gives exactly the dict
path's records and summary: on the generated corpus, on odd records, on generated
envelopes of any JSON values and on damaged lines, in every layout."""

from __future__ import annotations

import gzip
import json
import random
import string
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from refusals import LLMResponse, NormalizeError, normalize
from refusals.providers import struct_reader
from refusals.scan import Classifier, Summary, Task, _classify, expand_paths, plan, run_task
from refusals.scan._classify import (
    _STOP_MEMO_SIZE,
    _bare_reader,
    _heads,
    _stop_fields,
    _stop_memo,
)
from refusals.scan._summary import MAX_BLOCKED_KEYS, MAX_EXPLANATIONS, MAX_PLAIN_KEYS, Tally
from refusals.scan.corpus import Truth, exec_run, write_bench_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

Rows = list[tuple[Any, ...]]

FORCED = ("jsonl", "openai-batch", "anthropic-batch", "exec-events")


def _scan(
    path: Path | str, *, typed: bool, layout: str = "auto", keep: bool = True
) -> tuple[dict[str, Any], Rows]:
    """The summary (as JSON) and the record rows of one file, read one way."""
    summary = Summary()
    records: list[Any] = []
    for item in plan([str(path)], layout):
        assert isinstance(item, Task)
        result = run_task(item, records.append if keep else None, typed=typed)
        summary.merge(result.summary)
    return summary.to_json(), [record.row() for record in records]


def _assert_same(path: Path | str, layout: str = "auto") -> tuple[dict[str, Any], Rows]:
    typed = _scan(path, typed=True, layout=layout)
    reference = _scan(path, typed=False, layout=layout)
    assert typed[0] == reference[0]
    assert typed[1] == reference[1]
    # A scan that keeps no records counts them the short way: the same summary.
    assert _scan(path, typed=True, layout=layout, keep=False)[0] == reference[0]
    return reference


def _body(fixture: str) -> Any:
    return orjson.loads((FIXTURES / fixture).read_bytes())


CHAT_REFUSAL = _body("openai-chat/refusal.json")
CHAT_STOP = _body("openai-chat/written/stream-stop.json")
RESPONSES_REFUSAL = _body("openai-responses/written/refusal.json")
ANTHROPIC_REFUSAL = _body("anthropic/vercel-refusal-cyber.json")
ANTHROPIC_STOP = _body("anthropic/stop-sequence.json")
ANTHROPIC_FALLBACK = _body("anthropic/written/refusal-fallback-iterations.json")
GEMINI_BLOCKED = _body("gemini/finish-safety-blocked.json")
CHAT_ERROR = _body("openai-chat/written/error-content-policy-violation.json")
ANTHROPIC_ERROR = _body("anthropic/written/error-400-output-blocked.json")


def _openai(response: Any = None, **keys: Any) -> dict[str, Any]:
    return {"id": "b", "custom_id": "req-1", "response": response, "error": None, **keys}


def _wrapped(body: Any, status: Any = 200, **keys: Any) -> dict[str, Any]:
    return {"status_code": status, "request_id": "req_9", "body": body, **keys}


def _anthropic(result: Any) -> dict[str, Any]:
    return {"custom_id": "req-2", "result": result}


ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    400,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**70,
    -(2**63),
    -(2**63) - 1,
    400.0,
    1e300,
    "",
    "text",
    "\ud800",
    "caf\u00e9",
    [],
    [1, "a"],
    {},
    {"type": "error"},
]
"""Values of every JSON type and edge, put in each slot an envelope reads."""


def _odd_records() -> list[Any]:
    """Envelopes and bodies of odd types and values, as decoded JSON."""
    records: list[Any] = [
        _openai(_wrapped(CHAT_REFUSAL)),
        _openai(_wrapped(RESPONSES_REFUSAL, request_id=None)),
        _openai(_wrapped(CHAT_ERROR, 400)),
        _openai(_wrapped(CHAT_ERROR, 2**64 + 400)),
        _openai(_wrapped(json.dumps(CHAT_REFUSAL))),
        _openai(_wrapped(json.dumps(CHAT_ERROR), 400)),
        _openai(_wrapped("not json at all", 500)),
        _openai(_wrapped({})),
        _openai(_wrapped({"unknown": 1})),
        _openai(None, error={"code": "batch_expired", "message": "m"}),
        _openai(None, error={"code": None}),
        _openai(None, error={}),
        {"custom_id": "x", "error": {"code": "x"}},
        # Without a custom id the record's id is the response's, else the envelope's.
        _openai(_wrapped(CHAT_ERROR, 400), custom_id=None),
        _openai(_wrapped({**CHAT_STOP, "id": None}), custom_id=None),
        _openai(_wrapped({**CHAT_STOP, "id": None}, request_id=None), custom_id=None),
        {"custom_id": "x"},
        _anthropic({"type": "succeeded", "message": ANTHROPIC_REFUSAL}),
        _anthropic({"type": "succeeded", "message": ANTHROPIC_STOP, "error": None}),
        _anthropic({"type": "errored", "error": ANTHROPIC_ERROR}),
        _anthropic({"type": "errored", "error": {"type": "error", "error": {"type": 5}}}),
        _anthropic({"type": "errored", "error": {"error": "overloaded_error"}}),
        _anthropic({"type": "canceled"}),
        _anthropic({"type": "expired", "message": None}),
        _anthropic({"type": "mystery"}),
        _anthropic({"type": "succeeded"}),
        _anthropic({"type": "succeeded", "message": json.dumps(ANTHROPIC_STOP)}),
        _anthropic({"type": "errored", "error": "overloaded"}),
        CHAT_REFUSAL,
        ANTHROPIC_REFUSAL,
        GEMINI_BLOCKED,
        CHAT_ERROR,
        {"model": "llama3", "response": "Hello", "done": True, "done_reason": "stop"},
        {"model": "llama3", "message": {"role": "assistant", "content": "Hi"}, "done": True},
        {**ANTHROPIC_STOP, "type": 7},
        {**ANTHROPIC_STOP, "custom_id": "in-a-body"},
        {"type": "thread.started", "thread_id": "t1", "model": "anthropic:claude"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i1", "type": "agent_message"}},
        {"type": "thread.completed", "outcome_code": "success", "stop_reason": "stop"},
        {"type": "refusal", "kind": "refusal"},
        {"nothing": "known"},
    ]
    # Big integers where the bodies keep their counts (orjson reads 2**64 on as floats).
    for big in (2**63, 2**64 - 1, 2**64, 2**64 + 1, -(2**63) - 1):
        usage = {"prompt_tokens": big, "completion_tokens": big, "total_tokens": big}
        records.append(_openai(_wrapped({**CHAT_REFUSAL, "usage": usage, "created": big})))
        records.append(
            _anthropic(
                {
                    "type": "succeeded",
                    "message": {**ANTHROPIC_STOP, "usage": {"input_tokens": big}},
                }
            )
        )
        records.append({**GEMINI_BLOCKED, "usageMetadata": {"promptTokenCount": big}})
    for value in ODD_VALUES:
        records += [
            _openai(value),
            _openai(_wrapped(CHAT_STOP, value)),
            _openai(_wrapped(CHAT_STOP, request_id=value)),
            _openai(_wrapped(value)),
            _openai(None, error=value),
            _openai(_wrapped(CHAT_STOP), custom_id=value),
            _openai(None, error={"code": value}),
            _anthropic(value),
            _anthropic({"type": value, "message": ANTHROPIC_STOP}),
            _anthropic({"type": "succeeded", "message": value}),
            _anthropic({"type": "errored", "error": value}),
            {"custom_id": "z", "result": {"type": "canceled"}, "response": value},
            {**ANTHROPIC_STOP, "type": value},
            {**CHAT_STOP, "error": value},
            value,
        ]
    return records


ODD_LINES: list[bytes] = [
    b"",
    b"   ",
    b"not JSON",
    b"[1, 2, 3]",
    b"42",
    b'"a string"',
    b"null",
    b'{"truncated": ',
    b'{"custom_id": "x", "response": {"status_code": 200, "body": {"id": "a"',
    b"\xef\xbb\xbf" + orjson.dumps(CHAT_REFUSAL),
    orjson.dumps(CHAT_REFUSAL) + b"\r",
    orjson.dumps(CHAT_REFUSAL) + b"   \t",
    b"  " + orjson.dumps(_openai(_wrapped(CHAT_REFUSAL))),
    orjson.dumps(CHAT_REFUSAL) + b" trailing",
    # Lone surrogates, escaped, in a key orjson reads and in bytes msgspec skips.
    b'{"custom_id": "\\ud800", "result": {"type": "canceled"}}',
    b'{"custom_id": "a", "x": "\\udc00", "result": {"type": "canceled"}}',
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b'"req_9"', b'"\\ud83d"'),
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b'"stop"', b'"\\udfff"'),
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b'"stop"', b'"\\ud83d\\ude00"'),
    # Bytes that are not UTF-8, where msgspec would skip them and where it reads them.
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b'"b"', b'"\xff"'),
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b'"req-1"', b'"\xc0\x80"'),
    orjson.dumps(_anthropic({"type": "succeeded", "message": ANTHROPIC_STOP})).replace(
        b"Paris", b"Par\xed\xa0\x80s"
    ),
    orjson.dumps(CHAT_STOP).replace(b"chatcmpl", b"chat\xf4\x90\x80\x80"),
    # Valid UTF-8 beyond ASCII.
    orjson.dumps(_openai(_wrapped({**CHAT_REFUSAL, "id": "caf\u00e9 \U0001f600"}))),
    # Escaped key names and duplicate keys (orjson keeps the last).
    b'{"custom\\u005fid": "e", "result": {"type": "expired"}}',
    b'{"custom_id": "a", "custom_id": 5, "result": {"type": "canceled"}}',
    b'{"custom_id": 5, "custom_id": "a", "result": {"type": "canceled"}}',
    b'{"custom_id": "a", "result": 5, "result": {"type": "canceled"}}',
    b'{"custom_id": "a", "result": {"type": "canceled"}, "result": {"type": "mystery"}}',
    b'{"Custom_id": "a", "result": {"type": "canceled"}}',
    # Nesting around orjson's limit (1024) and msgspec's.
    b'{"custom_id": "d", "result": {"type": "canceled"}, "x": ' + b"[" * 990 + b"]" * 990 + b"}",
    b'{"custom_id": "d", "result": {"type": "canceled"}, "x": ' + b"[" * 1023 + b"]" * 1023 + b"}",
    b'{"custom_id": "d", "result": {"type": "canceled"}, "x": ' + b"[" * 1030 + b"]" * 1030 + b"}",
    # Numbers orjson refuses in bytes msgspec reads (NaN, leading zeros).
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b"200", b"NaN"),
    orjson.dumps(_openai(_wrapped(CHAT_STOP))).replace(b"200", b"0200"),
]
"""Lines as bytes: not JSON, damaged, or odd in ways only raw bytes can be."""


def _dump(value: Any, ascii_only: bool) -> bytes:
    # json, not orjson: integers past 64 bits and lone surrogates must reach the line.
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_the_typed_path_gives_the_dict_paths_records_on_the_corpus(
    corpus: tuple[Path, Truth],
) -> None:
    root, truth = corpus
    records = 0
    for path in expand_paths([str(root)]):
        records += len(_assert_same(path)[1])
    assert records == truth.records


def test_the_typed_path_reads_the_common_lines_itself(corpus: tuple[Path, Truth]) -> None:
    # Otherwise the comparisons above would only compare the dict path with itself.
    root, _ = corpus
    plain = root / "batches" / "openai-batch-output.jsonl"
    classifier = Classifier(str(plain), "openai-batch")
    lines = plain.read_bytes().splitlines()
    read = [line for line in lines if classifier.read_line(line) is not None]
    assert len(read) == len(lines) - 2  # all but the two bad lines


def test_the_typed_path_gives_the_dict_paths_records_on_a_bench_file(tmp_path: Path) -> None:
    path = tmp_path / "bench.jsonl"
    truth = write_bench_file(path, 300_000, seed=3)
    summary, rows = _assert_same(path)
    assert summary["records"] == len(rows) == truth.records


@pytest.mark.parametrize("ascii_only", [True, False])
def test_odd_records_get_the_same_verdict_or_problem_in_every_layout(
    tmp_path: Path, ascii_only: bool
) -> None:
    lines = [_dump(record, ascii_only) for record in _odd_records()] + ODD_LINES
    path = _write(tmp_path / "odd.jsonl", lines)
    summary, rows = _assert_same(path)
    assert summary["bad_records"] > 30
    assert len(rows) > 100
    for layout in FORCED:
        _assert_same(path, layout)


def _nested(depth: int, opener: bytes, closer: bytes) -> bytes:
    return opener * depth + b"1" + closer * depth


DEEP_LINES = [
    b'{"custom_id": "d", "result": {"type": "canceled"}, "x": ' + _nested(d, b"[", b"]") + b"}"
    for d in (1022, 1023, 1024, 1100)
] + [b'{"x": ' + _nested(d, b'{"a": ', b"}") + b', "type": "message"}' for d in (1023, 1024)]


def test_nesting_past_orjsons_limit_is_refused_even_where_msgspec_would_allow_it(
    tmp_path: Path,
) -> None:
    # msgspec's depth limit follows the recursion limit here, so raise it past orjson's.
    path = _write(tmp_path / "deep.jsonl", DEEP_LINES)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        summary, _ = _assert_same(path)
    finally:
        sys.setrecursionlimit(limit)
    assert (summary["records"], summary["bad_records"]) == (2, 4)


def test_a_batch_file_with_odd_lines_among_good_ones_is_read_the_same(tmp_path: Path) -> None:
    # Sniffed as openai-batch from its first line; every other shape is mixed in.
    first = orjson.dumps(_openai(_wrapped(CHAT_REFUSAL)))
    lines = [first] + [_dump(record, False) for record in _odd_records()] + ODD_LINES
    _assert_same(_write(tmp_path / "batch.jsonl", lines))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
bodies = st.sampled_from(
    [CHAT_REFUSAL, CHAT_STOP, RESPONSES_REFUSAL, ANTHROPIC_STOP, GEMINI_BLOCKED, CHAT_ERROR]
)
slot_values = json_values | bodies | bodies.map(json.dumps)


@st.composite
def envelopes(draw: st.DrawFn) -> Any:
    """An envelope of some layout with any JSON values in the slots the paths read."""
    kind = draw(st.sampled_from(["openai", "anthropic", "plain"]))
    if kind == "openai":
        wrapped = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "status_code": st.sampled_from([200, 400, 429, 500, 2**64]) | json_values,
                    "request_id": st.just("req") | json_values,
                    "body": slot_values,
                },
            )
            | json_values
        )
        keys = {"custom_id": st.just("c") | json_values, "error": json_values}
        envelope = draw(st.fixed_dictionaries({"response": st.just(wrapped)}, optional=keys))
    elif kind == "anthropic":
        result = draw(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["succeeded", "errored", "canceled", "expired", "x"])
                    | json_values
                },
                optional={"message": slot_values, "error": slot_values},
            )
            | json_values
        )
        envelope = {"custom_id": draw(st.just("c") | json_values), "result": result}
    else:
        envelope = dict(draw(bodies))
        envelope.update(draw(st.dictionaries(st.sampled_from(["type", "error", "x"]), json_values)))
    extra = draw(st.dictionaries(st.sampled_from(["id", "zz", "type"]), json_values, max_size=2))
    return {**extra, **envelope}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(envelopes(), min_size=1, max_size=6), st.booleans())
def test_generated_envelopes_get_the_same_verdicts(
    tmp_path_factory: pytest.TempPathFactory, records: list[Any], ascii_only: bool
) -> None:
    path = _write(
        tmp_path_factory.mktemp("envelopes") / "lines.jsonl",
        [_dump(record, ascii_only) for record in records],
    )
    _assert_same(path)
    _assert_same(path, "openai-batch")


_SEED_LINES = [
    orjson.dumps(_openai(_wrapped(CHAT_REFUSAL))),
    orjson.dumps(_anthropic({"type": "succeeded", "message": ANTHROPIC_REFUSAL})),
    orjson.dumps(GEMINI_BLOCKED),
    # Plain answers, which a scan that keeps no records counts from their verdict alone.
    orjson.dumps(_openai(_wrapped(CHAT_STOP))),
    orjson.dumps(_anthropic({"type": "succeeded", "message": ANTHROPIC_STOP})),
]


@st.composite
def damaged_lines(draw: st.DrawFn) -> bytes:
    """A real line with a few bytes replaced, inserted or removed."""
    line = bytearray(draw(st.sampled_from(_SEED_LINES)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(line) - 1))
        edit = draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = draw(st.sampled_from(b'"\\{}[]:,0e-9 \xff\xc3\xed\x00\n'))
        if edit == "replace":
            line[at] = byte
        elif edit == "insert":
            line.insert(at, byte)
        else:
            del line[at]
    return bytes(line).replace(b"\n", b" ")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(damaged_lines(), min_size=1, max_size=5))
def test_damaged_lines_get_the_same_verdict_or_problem(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    # The one documented difference (`_classify._plausible`): a number beyond a double's
    # range in bytes the typed path skips. Such lines are left out, not tolerated.
    assume(not any(_infinite_number(line) for line in lines))
    path = _write(tmp_path_factory.mktemp("damaged") / "lines.jsonl", lines)
    _assert_same(path)


def _infinite_number(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return "number is infinity" in str(exc)
    return False


def _fields_from_the_response(response: LLMResponse) -> tuple[str | None, ...]:
    stop = response.stop_details
    if stop is None:
        return (None, None, None)
    category = stop.category or (", ".join(stop.categories) if stop.categories else None)
    return (category, stop.explanation, stop.recommended_model)


def test_kept_stop_details_answer_as_the_response_does_on_every_fixture() -> None:
    # Each body is read three times: the first answer is kept, the next two reuse it
    # through equal details of other responses, or through dicts, which are not kept.
    _stop_memo.clear()
    checked = with_details = 0
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            first, again = normalize(path.read_bytes()), normalize(path.read_bytes())
            as_dicts = normalize(path.read_bytes())
        except NormalizeError:
            continue
        as_dicts.reasoning_details = [
            orjson.loads(d) if isinstance(d, str) and d.startswith("{") else d
            for d in as_dicts.reasoning_details or ()
        ]
        expected = _fields_from_the_response(first)
        assert _stop_fields(first) == expected, path
        assert _stop_fields(again) == expected, path
        assert _stop_fields(as_dicts) == _fields_from_the_response(as_dicts), path
        checked += 1
        with_details += expected != (None, None, None)
    assert checked > 150
    assert with_details > 30
    assert 0 < len(_stop_memo) <= _STOP_MEMO_SIZE


def test_repeated_error_bodies_count_as_each_would_alone(tmp_path: Path) -> None:
    # A counting scan keeps what each error body counted as, by its status and bytes:
    # the same body under another status, another layout or a full memo must still
    # count as the dict path says.
    lines: list[bytes] = []
    for index in range(600):
        status = (400, 429, 500, 403)[index % 4]
        # Anthropic's output-blocked body is a filter under 400 and 403 only.
        body: Any = (ANTHROPIC_ERROR, CHAT_ERROR, {"error": {"message": f"m{index % 300}"}})[
            index % 3
        ]
        lines.append(orjson.dumps(_openai(_wrapped(body, status), custom_id=f"r{index}")))
        lines.append(
            orjson.dumps(
                _anthropic(
                    {"type": "errored", "error": ANTHROPIC_ERROR if index % 2 else CHAT_ERROR}
                )
            )
        )
    _, rows = _assert_same(_write(tmp_path / "errors.jsonl", lines))
    assert len(rows) == 1200
    assert {row[6] for row in rows} == {"content_filter", "error"}


def test_repeated_failures_without_a_response_count_as_each_would_alone(tmp_path: Path) -> None:
    # An OpenAI line's error without a response, and an Anthropic result canceled or
    # expired, are counted from a memo by their error's bytes: each code, odd errors and
    # a result type that is neither must still count as the dict path says.
    errors: list[Any] = [
        {"code": "batch_expired", "message": "expired"},
        {"code": "batch_cancelled", "message": "cancelled"},
        {"code": None, "message": "no code"},
        {"code": 7},
        {},
        "not an object",
        None,
    ]
    lines: list[bytes] = []
    for index in range(300):
        error = errors[index % len(errors)]
        response = (None, {"status_code": 200, "body": None}, "text")[index % 3]
        lines.append(orjson.dumps(_openai(response, error=error, custom_id=f"r{index}")))
        kind = ("canceled", "expired", "errored", "succeeded", "unknown")[index % 5]
        lines.append(orjson.dumps(_anthropic({"type": kind})))
        lines.append(orjson.dumps(_anthropic({"type": "errored", "error": ANTHROPIC_ERROR})))
        lines.append(orjson.dumps(_anthropic({"type": "errored", "error": error})))
    summary, rows = _assert_same(_write(tmp_path / "failures.jsonl", lines))
    assert len(rows) + len(summary["problems"]) > 0
    assert {row[6] for row in rows} >= {"error"}
    # After its first line, each failure is counted from the memo in `count_plain`'s one
    # decode; the lines the typed path cannot read still take the dict path.
    classifier = Classifier("failures.jsonl", "jsonl")
    tally = Tally(Summary())
    short = 0
    for line in lines:
        if classifier.count_plain(line, tally):
            short += 1
        else:
            classifier.count_rest(line, tally)
    assert short > len(lines) // 2


def test_a_truncated_gzip_counts_the_same_lines_before_the_cut_however_it_is_read(
    tmp_path: Path,
) -> None:
    # A counting scan holds back the lines the plain Structs decline (refusals here) and
    # reads them later: those read before the damage must count all the same.
    lines = []
    for index in range(1500):
        body = CHAT_REFUSAL if index % 3 else CHAT_STOP
        lines.append(orjson.dumps(_openai(_wrapped(body), custom_id=f"r{index}")) + b"\n")
    whole = gzip.compress(b"".join(lines))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) * 3 // 5])
    summary, _ = _assert_same(path)
    assert 500 < summary["records"] < 1500
    assert summary["refused"] > 300
    assert summary["file_errors"] == 1


def test_exec_runs_spanning_many_held_back_lines_are_read_whole(tmp_path: Path) -> None:
    # Exec events are held back with the other lines the plain Structs decline, and a run
    # spans lines: with more plain lines inside a run than are held at a time, each run
    # must still be one record, as the dict path reads it.
    lines: list[bytes] = []
    for thread, outcome in (("t1", "refused"), ("t2", "success"), ("t3", "content_filtered")):
        events = list(exec_run(thread, outcome))
        lines.append(orjson.dumps(events[0]))
        lines.extend(orjson.dumps(CHAT_STOP) for _ in range(700))
        lines.extend(orjson.dumps(event) for event in events[1:])
    summary, _ = _assert_same(_write(tmp_path / "runs.jsonl", lines))
    assert summary["records"] == 3 * 700 + 3
    assert (summary["refused"], summary["content_filtered"]) == (1, 1)


def test_refusals_with_more_explanations_than_a_tally_holds_count_as_each_alone(
    tmp_path: Path,
) -> None:
    # A counting scan tallies refused records by key (explanation included) and adds the
    # tally to the summary when it holds too many keys: past both that bound and the
    # summary's own bound on explanations, the counts must be the dict path's.
    lines: list[bytes] = []
    count = MAX_BLOCKED_KEYS + MAX_EXPLANATIONS // 2
    for index in range(count):
        refusal = json.loads(json.dumps(CHAT_REFUSAL))
        refusal["choices"][0]["message"]["refusal"] = f"I can't help with request {index}."
        refusal["usage"]["prompt_tokens"] = index
        lines.append(orjson.dumps(_openai(_wrapped(refusal), custom_id=f"r{index}")))
        message = json.loads(json.dumps(ANTHROPIC_REFUSAL))
        message["content"] = [{"type": "text", "text": f"No, not {index % 700}."}]
        lines.append(orjson.dumps(_anthropic({"type": "succeeded", "message": message})))
    summary, rows = _assert_same(_write(tmp_path / "refusals.jsonl", lines))
    assert len(rows) == 2 * count
    assert summary["refused"] == 2 * count
    # More explanations than the summary keeps: the rest are counted together.
    assert summary["explanations"]["other"][0] > 0


_BARE_BODIES = [
    CHAT_STOP,
    CHAT_REFUSAL,
    ANTHROPIC_STOP,
    ANTHROPIC_REFUSAL,
    GEMINI_BLOCKED,
    _body("gemini/finish-max-tokens.json"),
    _body("gemini/prompt-blocked-model-armor.json"),
    _body("bedrock/converse-end-turn.json"),
    _body("bedrock/converse-guardrail-trace-no-action.json"),
]


def test_bare_bodies_read_in_one_decode_keep_the_dict_paths_verdicts(tmp_path: Path) -> None:
    # Bare bodies of the formats whose readers take a decoded Struct are counted from one
    # decode (`Classifier._count_bare`); the keys that make a line something else must
    # still send it the dict path's way: an exec event's or proxy line's `type` (a
    # `fallback` event was once counted as a response), a `custom_id`, escaped too.
    lines: list[bytes] = []
    for body in _BARE_BODIES:
        lines.append(orjson.dumps(body))
        for kind in ("fallback", "refusal", "item.started", "thread.started", "proxy.verdict"):
            lines.append(orjson.dumps({**body, "type": kind}))
        lines.append(orjson.dumps({**body, "type": 7}))
        lines.append(orjson.dumps(body)[:-1] + b',"custom\\u005fid":"c","result":null}')
        lines.append(orjson.dumps({**body, "custom_id": "c"}))
    summary, _ = _assert_same(_write(tmp_path / "bare.jsonl", lines))
    assert summary["records"] >= 2 * len(_BARE_BODIES)


CHAT_TOOLS = _body("openai-chat/tool-calls.json")
CHAT_LENGTH = _body("openai-chat/length.json")

# Values a plain answer's keys take in other bodies: another vendor's marks, a refusal,
# a filter, an error, a fallback, and what only raw bytes can say.
_PLAIN_KEY_VALUES: list[Any] = [
    *ODD_VALUES,
    "chat.completion",
    "message",
    "stop",
    "end_turn",
    "tool_use",
    "content_filter",
    "refusal",
    "fallback",
    "fp_ollama",
    {"usage": {"prompt_tokens": 1}},
    {"filtered": True, "severity": "high"},
    {"type": "text", "text": "t"},
    [{"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}}],
    [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": 2**64}}],
    [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}],
    [{"type": "tool_use", "id": "t", "name": "n", "input": {"a": "\ud800"}}],
    [{"type": "tool_use", "id": "t", "name": "n", "input": [1e308, 2**70]}],
    [{"type": "fallback_message", "model": "claude-b"}],
    [{"function": {"name": "f", "arguments": {"a": 1}}}],
    [{"custom": {"name": "c", "input": "x"}}],
]


def _set_at(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of `body` with the key at `path` set to `value` (the last key added)."""
    copy = orjson.loads(orjson.dumps(body))
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return copy


def _chat_paths(body: Any) -> list[tuple[Any, ...]]:
    choice = ("choices", 0)
    message = (*choice, "message")
    paths: list[tuple[Any, ...]] = [
        (key,)
        for key in (
            "object",
            "choices",
            "id",
            "type",
            "model",
            "usage",
            "system_fingerprint",
            "provider",
            "x_groq",
            "prompt_filter_results",
            "prompt_annotations",
            "moderation",
            "error",
            "amazon-bedrock-guardrailAction",
        )
    ]
    paths += [(*choice, key) for key in ("index", "message", "delta", "finish_reason")]
    paths += [(*choice, key) for key in ("native_finish_reason", "content_filter_results")]
    paths += [
        (*message, key)
        for key in ("content", "refusal", "reasoning", "reasoning_details", "tool_calls")
    ]
    paths += [(*message, "function_call"), (*message, "role")]
    if body["choices"][0]["message"].get("tool_calls"):
        call = (*message, "tool_calls", 0)
        paths += [(*call, "function"), (*call, "custom"), (*call, "function", "arguments")]
    return paths


def _message_paths(body: Any) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = [
        (key,)
        for key in (
            "type",
            "stop_reason",
            "object",
            "model",
            "content",
            "stop_details",
            "usage",
            "status",
            "amazon-bedrock-invocationMetrics",
        )
    ]
    paths += [("usage", key) for key in ("input_tokens", "iterations")]
    paths += [("content", 0, key) for key in ("type", "text", "input", "from", "to")]
    return paths


GEMINI_LENGTH = _body("gemini/finish-max-tokens.json")
GEMINI_STOP = {
    **GEMINI_LENGTH,
    "candidates": [{**GEMINI_LENGTH["candidates"][0], "finishReason": "STOP"}],
}
_REASONED = _body("bedrock/written/tool-use-reasoning.json")
# The same answer without its redacted reasoning block, which makes it not plain.
CONVERSE_TOOLS = _set_at(
    _REASONED,
    ("output", "message", "content"),
    [
        block
        for block in _REASONED["output"]["message"]["content"]
        if "redactedContent" not in str(block)
    ],
)
CONVERSE_STOP = _body("bedrock/converse-end-turn.json")

_GEMINI_VALUES: list[Any] = [
    "STOP",
    "SAFETY",
    "MAX_TOKENS",
    "2025-01-01T00:00:00Z",
    {"blockReason": "SAFETY"},
    {"code": 429, "message": "m"},
    [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "HIGH", "blocked": True}],
    [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"}],
    [{"functionCall": {"name": "f", "args": {"a": 1}}}],
    [{"text": "a"}, {"functionCall": {"name": "f"}}],
    [{"finishReason": "STOP", "index": 1}, {"finishReason": "SAFETY", "index": 0}],
]
_CONVERSE_VALUES: list[Any] = [
    "end_turn",
    "guardrail_intervened",
    "message",
    "error",
    {"guardrail": {"outputAssessments": {}}},
    _body("bedrock/written/end-turn-trace-blocked.json")["trace"],
    {"text": "t"},
    [{"citationsContent": {"citations": []}}],
    [{"reasoningContent": {"redactedContent": "eA=="}}],
    [{"toolUse": {"toolUseId": "t", "name": "n", "input": {"a": 1}}}],
    "INTERVENED",
]


def _gemini_paths() -> list[tuple[Any, ...]]:
    candidate = ("candidates", 0)
    paths: list[tuple[Any, ...]] = [
        (key,)
        for key in (
            "candidates",
            "createTime",
            "error",
            "modelVersion",
            "promptFeedback",
            "responseId",
            "usageMetadata",
            "object",
            "type",
            "choices",
            "output",
            "amazon-bedrock-guardrailAction",
        )
    ]
    paths += [
        (*candidate, key)
        for key in ("content", "finishMessage", "finishReason", "index", "safetyRatings")
    ]
    paths += [(*candidate, "content", "parts")]
    return paths


def _converse_paths(body: Any) -> list[tuple[Any, ...]]:
    paths: list[tuple[Any, ...]] = [
        (key,)
        for key in (
            "output",
            "stopReason",
            "usage",
            "trace",
            "object",
            "type",
            "candidates",
            "promptFeedback",
            "amazon-bedrock-invocationMetrics",
        )
    ]
    paths += [("output", "message"), ("output", "message", "content")]
    for index, block in enumerate(body["output"]["message"]["content"]):
        paths += [("output", "message", "content", index, key) for key in block]
    return paths


def test_plain_answers_with_any_key_changed_count_as_the_dict_path_reads_them(
    tmp_path: Path,
) -> None:
    # A counting scan decodes lines into Structs that take plain answers only (batch
    # lines into `_QuickBatchLine`, bare bodies into each format's plain Struct): any
    # value in any key they read must leave the dict path's verdict, whether it makes the
    # body another vendor's or format's, refused, filtered or failed.
    lines: list[bytes] = []
    for body in (CHAT_STOP, CHAT_TOOLS, CHAT_LENGTH):
        assert body["object"] == "chat.completion"
        for path in _chat_paths(body):
            for value in _PLAIN_KEY_VALUES:
                changed = _set_at(body, path, value)
                lines.append(_dump(_openai(_wrapped(changed)), ascii_only=True))
                lines.append(_dump(changed, ascii_only=True))
    for path in _message_paths(ANTHROPIC_STOP):
        for value in _PLAIN_KEY_VALUES:
            changed = _set_at(ANTHROPIC_STOP, path, value)
            lines.append(_dump(_anthropic({"type": "succeeded", "message": changed}), True))
            lines.append(_dump(changed, ascii_only=True))
    for body in (GEMINI_LENGTH, GEMINI_STOP):
        for path in _gemini_paths():
            for value in ODD_VALUES + _GEMINI_VALUES:
                lines.append(_dump(_set_at(body, path, value), ascii_only=True))
    for body in (CONVERSE_STOP, CONVERSE_TOOLS):
        for path in _converse_paths(body):
            for value in ODD_VALUES + _CONVERSE_VALUES:
                lines.append(_dump(_set_at(body, path, value), ascii_only=True))
    summary, rows = _assert_same(_write(tmp_path / "plain.jsonl", lines))
    # The changes make every kind of verdict, and many stay plain answers.
    finishes = {row[6] for row in rows}
    assert {"stop", "length", "tool_calls", "refusal", "content_filter", "error"} <= finishes
    providers = {row[4] for row in rows}
    assert {"openai", "azure", "openrouter", "groq", "ollama", "anthropic"} <= providers
    assert {"gemini", "vertex", "bedrock"} <= providers
    assert {(row[4], row[6]) for row in rows} >= {("bedrock", "tool_calls"), ("gemini", "length")}
    assert summary["records"] > 2000


def test_plain_answers_of_one_model_count_by_their_vendor_marks(tmp_path: Path) -> None:
    # `openai_chat.plain_answer` keeps verdicts by model and finish for bodies without a
    # vendor mark: bodies of the same model with Groq's or Ollama's marks, or a blank or
    # missing model, must still count as the dict path says, bare and in batch lines, past
    # the memo's bound too.
    lines: list[bytes] = []
    for index in range(1400):
        model: Any = ("llama-3.3-70b", "gpt-4o", "  ", None, f"m{index % 700}")[index % 5]
        body: Any = {**CHAT_STOP, "id": f"chatcmpl-{index}", "model": model}
        if model is None:
            del body["model"]
        mark = index % 3
        if mark == 1:
            body["x_groq"] = {"id": f"req_{index}"}
        elif mark == 2:
            body["system_fingerprint"] = "fp_ollama"
        body["choices"] = [{**body["choices"][0], "finish_reason": ("stop", "length")[index % 2]}]
        lines.append(orjson.dumps(body))
        lines.append(orjson.dumps(_openai(_wrapped(body), custom_id=f"r{index}")))
    _, rows = _assert_same(_write(tmp_path / "marks.jsonl", lines))
    assert len(rows) == 2800
    assert {row[4] for row in rows} >= {"groq", "ollama", "openai"}


def test_a_tally_of_plain_answers_stays_bounded_on_new_models(tmp_path: Path) -> None:
    # A log that names a new model on every line: the counting scan's tally adds its
    # counts to the summary when it holds too many keys, so a file (one task however
    # long, when compressed) does not hold a key per line; the counts stay the dict path's.
    lines: list[bytes] = []
    count = MAX_PLAIN_KEYS + 300
    for index in range(count):
        lines.append(orjson.dumps({**CHAT_STOP, "model": f"model-{index}"}))
        message = {**ANTHROPIC_STOP, "model": f"claude-{index}"}
        lines.append(orjson.dumps(_anthropic({"type": "succeeded", "message": message})))
    path = _write(tmp_path / "models.jsonl", lines)
    summary, rows = _assert_same(path)
    assert len(rows) == 2 * count
    assert summary["records"] == 2 * count
    classifier = Classifier(str(path), "jsonl")
    counted = Summary()
    tally = Tally(counted)
    largest = 0
    for line in lines:
        assert classifier.count_line(line, tally)
        largest = max(largest, len(tally.plain), len(tally.counts))
    assert largest <= MAX_PLAIN_KEYS
    tally.add_to(counted)
    assert counted.records == 2 * count
    # The same bound on the keys counted with `add`.
    keys = Tally(counted)
    for index in range(count):
        keys.add(("openai", f"m{index}", "stop", True))
        assert len(keys.counts) <= MAX_PLAIN_KEYS
    keys.add_to(counted)
    assert counted.records == 3 * count


def _blocked_fixtures() -> list[Any]:
    """Every recorded JSON body of a format whose counting memo keys on `outcome_key`
    that is not a plain answer (refused, filtered, failed, or finished otherwise)."""
    bodies: list[Any] = []
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            body = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if not isinstance(body, dict):
            continue
        reader = struct_reader(orjson.dumps(body))
        if reader is None or reader.outcome_key is None:
            continue
        try:
            response = normalize(body)
        except NormalizeError:
            continue
        if response.finish_reason not in ("stop", "length", "tool_calls"):
            bodies.append(body)
    return bodies


# What a refused body's other keys take: ids and tokens that differ per record, and
# values that change what it counts as (its model, category, explanation, vendor).
_BLOCKED_KEY_VALUES: list[Any] = [
    None,
    "",
    "other",
    7,
    {},
    [],
    "fp_ollama",
    "chat.completion",
    {"prompt_tokens": 5, "completion_tokens": 9, "input_tokens": 5, "output_tokens": 9},
    {"promptTokenCount": 5, "candidatesTokenCount": 9, "thoughtsTokenCount": 2},
    {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14},
    {"iterations": [{"type": "fallback", "input_tokens": 1}], "input_tokens": 3},
    # Passes the usage lists (tokens each): one that a fallback model served, one not.
    {"iterations": [{"type": "message", "model": "a"}, {"type": "fallback_message"}]},
    {"iterations": [{"type": "message", "model": "a"}, {"type": "message"}]},
    {"category": "cyber", "explanation": "another"},
    {"type": "refusal", "category": "bio", "explanation": "e", "recommended_model": "m"},
]


def _each_key_and_nested(body: Any) -> list[tuple[Any, ...]]:
    """The paths of a body's keys, and of the keys one level into its objects and into
    the first item of its lists of objects."""
    paths: list[tuple[Any, ...]] = []
    for key, value in body.items():
        paths.append((key,))
        if isinstance(value, dict):
            paths += [(key, inner) for inner in value]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            paths += [(key, 0, inner) for inner in value[0]]
    return paths


def test_refused_bodies_read_once_per_kind_count_as_each_would_alone(tmp_path: Path) -> None:
    # A counting scan reads a body that is not a plain answer whole once per
    # `outcome_key` bytes (its ids and token counts left out) and counts the others
    # like it from the memo: every change to any key of a recorded refused, filtered or
    # failed body, each line written twice (so the second copy is the memo's), bare and
    # in both batch layouts, must count as the dict path counts it.
    bodies = _blocked_fixtures()
    formats = set()
    for body in bodies:
        reader = struct_reader(orjson.dumps(body))
        assert reader is not None
        formats.add(reader.body.__name__)
    assert formats == {"Completion", "Message", "Body", "Converse", "Response"}, formats
    lines: list[bytes] = []
    for body in bodies:
        for path in _each_key_and_nested(body):
            for value in _BLOCKED_KEY_VALUES:
                changed = _set_at(body, path, value)
                for line in (
                    _dump(changed, ascii_only=True),
                    _dump(_openai(_wrapped(changed)), ascii_only=True),
                    _dump(_anthropic({"type": "succeeded", "message": changed}), True),
                ):
                    lines += [line, line]
    written = _write(tmp_path / "blocked.jsonl", lines)
    summary, rows = _assert_same(written)
    finishes = {row[6] for row in rows}
    assert {"refusal", "content_filter", "error"} <= finishes
    assert summary["records"] > 5000
    # The memo was filled (it is cleared when full), so the copies after the first
    # were counted from it.
    classifier = Classifier(str(written), "jsonl")
    counted = Summary()
    tally = Tally(counted)
    for line in lines:
        classifier.count_line(line, tally)
    assert classifier._outcomes


def test_refused_bodies_that_differ_in_ids_and_tokens_only_share_one_reading(
    tmp_path: Path,
) -> None:
    # Real logs repeat a refusal under new ids and token counts: those are what the
    # memo's key leaves out, so 300 such bodies of each recorded kind are read whole
    # once each kind, and their tokens still sum as the dict path sums them.
    lines: list[bytes] = []
    for index in range(300):
        chat = _set_at(CHAT_REFUSAL, ("id",), f"chatcmpl-{index}")
        chat = _set_at(chat, ("usage",), {"prompt_tokens": index, "completion_tokens": 2 * index})
        message = _set_at(ANTHROPIC_REFUSAL, ("id",), f"msg_{index}")
        message = _set_at(message, ("usage",), {"input_tokens": index, "output_tokens": 3})
        gemini = _set_at(GEMINI_BLOCKED, ("responseId",), f"r{index}")
        gemini = _set_at(gemini, ("usageMetadata",), {"promptTokenCount": index})
        # A refusal a fallback model served: its passes' tokens are new on each line too.
        passes = _set_at(ANTHROPIC_FALLBACK, ("id",), f"msg_f{index}")
        usage = passes["usage"]
        iterations = [{**it, "input_tokens": index + n} for n, it in enumerate(usage["iterations"])]
        passes = _set_at(
            passes, ("usage",), {**usage, "input_tokens": index, "iterations": iterations}
        )
        lines += [
            orjson.dumps(_openai(_wrapped(chat), custom_id=f"c{index}")),
            orjson.dumps(_anthropic({"type": "succeeded", "message": message})),
            orjson.dumps(gemini),
            orjson.dumps(passes),
        ]
    path = _write(tmp_path / "repeats.jsonl", lines)
    summary, rows = _assert_same(path)
    assert len(rows) == 1200
    assert summary["totals"]["input_tokens"] == 4 * sum(range(300))
    _classify._body_outcomes.clear()
    classifier = Classifier(str(path), "jsonl")
    counted = Summary()
    tally = Tally(counted)
    for line in lines:
        assert classifier.count_line(line, tally)
    assert len(classifier._outcomes) == 4


def test_a_later_part_counts_from_the_outcomes_the_parts_before_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each part of a large file has a `Classifier` of its own. The memos of refused and
    # error bodies are the process's: a part must not read whole again the kinds the
    # parts before it read, and must count them the same.
    lines: list[bytes] = []
    for index in range(40):
        chat = _set_at(CHAT_REFUSAL, ("id",), f"chatcmpl-{index}")
        message = _set_at(ANTHROPIC_REFUSAL, ("id",), f"msg_{index}")
        lines += [
            orjson.dumps(_openai(_wrapped(chat), custom_id=f"c{index}")),
            orjson.dumps(_anthropic({"type": "succeeded", "message": message})),
            orjson.dumps(_openai(_wrapped(CHAT_ERROR, 400), custom_id=f"e{index}")),
        ]
    path = _write(tmp_path / "parts.jsonl", lines)
    summary, _ = _assert_same(path)
    _classify._body_outcomes.clear()
    _classify._error_outcomes.clear()
    first = Summary()
    tally = Tally(first)
    classifier = Classifier("part-0", "jsonl")
    for line in lines[:30]:
        assert classifier.count_line(line, tally)
    assert _classify._body_outcomes and _classify._error_outcomes

    def read_whole(response: LLMResponse) -> Any:
        raise AssertionError("a line read whole again")

    monkeypatch.setattr(_classify, "_outcome", read_whole)
    later = Classifier("part-1", "jsonl")
    for line in lines[30:]:
        assert later.count_line(line, tally)
    tally.add_to(first)
    assert first.records == len(lines)
    assert first.by_finish == summary["by_finish"]
    assert first.refused == 80


_HEAD_KEYS = ["id", "object", "type", "model", "candidates", "choices", "stopReason", "x"]
_HEAD_VALUES = ["chatcmpl", "chat", "msg", "claude", "gen", "cmpl", "resp", "response"]


@st.composite
def _bodies_by_their_heads(draw: st.DrawFn) -> bytes:
    """A body's first bytes as detection reads them (a first key, spaces, a value whose
    letters may run on past what the match reads), then telling keys of any format."""
    key = draw(st.sampled_from(_HEAD_KEYS))
    # Around the colon: none, either side, both (Python's `json.dumps` puts one after).
    before, after_colon = draw(st.sampled_from([("", ""), ("", " "), (" ", " "), ("\n  ", "\n  ")]))
    value = draw(st.sampled_from(_HEAD_VALUES)) + draw(st.sampled_from(["", "x", "abcdefgh"]))
    after = draw(st.sampled_from(["-1", "_01", '"', "1", "", "[", "{"]))
    rest = draw(
        st.lists(
            st.sampled_from(
                ['"stop_reason":1', '"candidates":[]', '"chat.completion"', '"stopReason":1']
            ),
            max_size=2,
        )
    )
    quoted = draw(st.booleans())
    first = f'"{value}{after}"' if quoted else f"{after or '0'}"
    return ("{" + f'"{key}"{before}:{after_colon}{first},' + ",".join(rest) + "}").encode()


@settings(max_examples=500, deadline=None)
@given(st.lists(_bodies_by_their_heads(), min_size=1, max_size=12))
# The first key's value starts at byte 16: the match read past the quote to look for it.
@example([b'{"model"\n  :\n  "1",}', b'{"model"\n  :\n  "claude-1",}'])
# Ids that start with no letter share one key; the telling keys still decide each line.
@example([b'{"id":"1a","choices":[]}', b'{"id":"2b","stop_reason":1}', b'{"id":"3c"}'])
def test_readers_kept_by_a_lines_first_bytes_are_the_ones_detection_picks(
    lines: list[bytes],
) -> None:
    # A counting scan keeps `struct_reader`'s answer by a line's first 16 bytes when they
    # decide it: lines that share those bytes but part later (a value's letters run on,
    # the first key names no format and the telling keys decide) get detection's reader.
    for line in lines + lines:
        assert _bare_reader(line) is struct_reader(line)


def test_batch_lines_and_bare_bodies_that_start_alike_are_each_counted_the_short_way(
    tmp_path: Path,
) -> None:
    # `count_plain` picks its decode by a line's first 16 bytes and keeps a batch line's
    # pick as a hint: a bare body under the same head must still be counted (by
    # `count_rest` once), and the hint given up, so that the next one is counted in one
    # decode again; and back.
    head = "batch_req_"
    batch = [
        orjson.dumps({"id": f"{head}{n}", "custom_id": f"c{n}", "response": _wrapped(CHAT_STOP)})
        for n in range(3)
    ]
    bare = [orjson.dumps({**CHAT_STOP, "id": f"{head}x{n}"}) for n in range(3)]
    lines = [batch[0], bare[0], bare[1], bare[2], batch[1], batch[2]]
    assert len({line[:16] for line in lines}) == 1
    summary, rows = _assert_same(_write(tmp_path / "alike.jsonl", lines))
    assert summary["records"] == len(rows) == 6
    classifier = Classifier("alike.jsonl", "jsonl")
    tally = Tally(Summary())
    short: list[bool] = []
    for line in lines:
        short.append(classifier.count_plain(line, tally))
        if not short[-1]:
            assert classifier.count_rest(line, tally)
    # At most the first line of a kind after the other kind takes the long way.
    assert short[0] and short[2:4] == [True, True] and short[5]


def test_bodies_whose_ids_are_random_past_their_prefix_share_one_kept_reader(
    tmp_path: Path,
) -> None:
    # Real ids are random right after the vendor's prefix (`msg_01XFD...`), within the
    # 16 bytes a reader is kept by: such bodies are kept by the bytes the first key's
    # match reads (the prefix and the byte after it), one entry for all of them.
    rng = random.Random(7)
    letters = string.ascii_letters + string.digits
    lines: list[bytes] = []
    for prefix in ("msg_01", "resp_", "gen-", ""):
        body = ANTHROPIC_STOP if prefix == "msg_01" else CHAT_STOP
        for _ in range(100):
            # A UUID's first letter may be a digit or one of a-f, as real ones are.
            tail = "".join(rng.choices(letters if prefix else "0123456789", k=24))
            rest = {key: value for key, value in body.items() if key != "id"}
            lines.append(orjson.dumps({"id": prefix + tail, **rest}))
            # As Python's `json.dumps` writes it, with spaces.
            lines.append(json.dumps({"id": prefix + tail, **rest}).encode())
    _heads.clear()
    for line in lines:
        assert _bare_reader(line) is struct_reader(line)
    assert len(_heads) == 8, sorted(_heads)
    summary, rows = _assert_same(_write(tmp_path / "random-ids.jsonl", lines))
    assert summary["records"] == len(rows) == 800


def test_parts_counted_on_threads_at_once_give_one_scans_summary(tmp_path: Path) -> None:
    # A Dask worker with several threads runs tasks at once, and they share the module's
    # kept readers and routes (clearing them when full): with thread switches made as
    # frequent as they can be, parts counted on four threads merge into the summary of
    # one scan of the whole file.
    path = tmp_path / "bench.jsonl"
    truth = write_bench_file(path, 2_000_000, seed=5)
    whole = _scan(path, typed=True, keep=False)[0]
    assert whole["records"] == truth.records
    tasks = [item for item in plan([str(path)], chunk_bytes=64 * 1024) if isinstance(item, Task)]
    assert len(tasks) > 20
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(run_task, tasks))
    finally:
        sys.setswitchinterval(interval)
    merged = Summary()
    for result in results:
        merged.merge(result.summary)
    assert merged.to_json()["by_finish"] == whole["by_finish"]
    assert merged.to_json()["records"] == whole["records"]
    assert not merged.to_json()["problems"]
