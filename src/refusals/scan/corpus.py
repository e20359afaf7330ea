"""A realistic mixed corpus for tests and benchmarks, with its ground-truth counts.

Records are built from real recorded payloads (copies of `tests/fixtures/` shipped
in `demo_fixtures/` beside this module, see its SOURCES.md, so that it works from
an installed package: `refusals scan --demo-corpus DIR`), wrapped in every layout
`refusals scan` reads: OpenAI Batch output, Anthropic Message Batches results, JSON
lines of mixed providers, single documents, recorded streams and `exec --json` event
logs, plain, gzip and zstd, with bad lines mixed in. Each template carries its
expected verdict, written by hand from the provider's documented meaning, so the
truth does not come from the classifier under test.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).resolve().parent / "demo_fixtures"
"""The recorded payloads the corpus is built from (byte-identical copies of the test
fixtures it names; tests/scan/test_corpus.py checks they stay so)."""

GroupKey = tuple[str | None, str | None, str, str | None]


@dataclass(frozen=True, slots=True)
class Expected:
    """The verdict a template must get: (provider, model, finish reason, category)."""

    provider: str | None
    model: str | None
    finish: str
    category: str | None = None
    resubmit: bool = False
    """A refused batch request with a recommended model (a `--resubmit` candidate)."""
    fallback: bool = False

    @property
    def key(self) -> GroupKey:
        return (self.provider, self.model, self.finish, self.category)


@dataclass(frozen=True, slots=True)
class Template:
    """One payload and its expected verdict; `status` for an HTTP error body."""

    fixture: str | None
    expected: Expected
    weight: int = 1
    status: int = 200
    body: Any = None


@dataclass
class Truth:
    """What a scan of the corpus must count."""

    records: int = 0
    bad_records: int = 0
    groups: Counter[GroupKey] = field(default_factory=Counter)
    resubmit: int = 0
    fallbacks: int = 0
    files: list[str] = field(default_factory=list)

    def count(self, expected: Expected) -> None:
        self.records += 1
        self.groups[expected.key] += 1
        self.resubmit += expected.resubmit
        self.fallbacks += expected.fallback

    def by_finish(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for key, count in self.groups.items():
            out[key[2]] += count
        return dict(sorted(out.items()))

    def merge(self, other: Truth) -> None:
        self.records += other.records
        self.bad_records += other.bad_records
        self.groups.update(other.groups)
        self.resubmit += other.resubmit
        self.fallbacks += other.fallbacks
        self.files.extend(other.files)


def _e(
    provider: str | None,
    model: str | None,
    finish: str,
    category: str | None = None,
    **flags: bool,
) -> Expected:
    return Expected(provider, model, finish, category, **flags)


GPT4O = "gpt-4o-2024-08-06"
GPT5 = "gpt-5-2025-08-07"

OPENAI_BATCH = (
    Template("openai-chat/written/stream-stop.json", _e("openai", GPT4O, "stop"), 40),
    Template("openai-chat/length.json", _e("openai", GPT4O, "length"), 4),
    Template("openai-chat/tool-calls.json", _e("openai", GPT4O, "tool_calls"), 8),
    Template("openai-chat/refusal.json", _e("openai", GPT4O, "refusal"), 3),
    Template("openai-chat/written/content-filter.json", _e("openai", GPT4O, "content_filter"), 2),
    Template("openai-responses/written/refusal.json", _e("openai-responses", GPT5, "refusal"), 2),
    Template(
        "openai-responses/written/incomplete-content-filter.json",
        _e("openai-responses", GPT5, "content_filter"),
    ),
    Template(
        "azure/written/chat-finish-content-filter.json",
        _e("azure", "gpt-4o-2024-11-20", "content_filter", "hate"),
    ),
    Template(
        "openai-chat/written/error-content-policy-violation.json",
        _e("openai", None, "content_filter"),
        status=400,
    ),
    Template("openai-chat/written/error-rate-limit.json", _e("openai", None, "error"), status=429),
    Template(
        None,
        _e("openai", None, "error"),
        body={"code": "batch_expired", "message": "This request could not be executed."},
    ),
)

ANTHROPIC_BATCH = (
    Template(
        "anthropic/stop-sequence.json", _e("anthropic", "claude-sonnet-4-5-20250929", "stop"), 40
    ),
    Template(
        "anthropic/written/max-tokens.json",
        _e("anthropic", "claude-sonnet-4-5-20250929", "length"),
        3,
    ),
    Template(
        "anthropic/written/stream-tool-use.json",
        _e("anthropic", "claude-sonnet-4-20250514", "tool_calls"),
        8,
    ),
    Template(
        # It recommends the model that refused: no --resubmit candidate.
        "anthropic/vercel-refusal-cyber.json",
        _e("anthropic", "claude-fable-5", "refusal", "cyber"),
        3,
    ),
    Template(
        None,
        _e("anthropic", "claude-fable-5", "refusal", "cyber", resubmit=True),
        2,
        body={
            "id": "msg_01RecommendsAnother",
            "type": "message",
            "role": "assistant",
            "model": "claude-fable-5",
            "content": [],
            "stop_reason": "refusal",
            "stop_sequence": None,
            "stop_details": {
                "type": "refusal",
                "category": "cyber",
                "explanation": "This request was declined under the cyber policy.",
                "recommended_model": "claude-opus-4-8",
            },
            "usage": {"input_tokens": 18, "output_tokens": 1},
        },
    ),
    Template(
        "anthropic/written/refusal-reasoning-extraction.json",
        _e("anthropic", "claude-opus-4-7", "refusal", "reasoning_extraction"),
    ),
    Template(
        "anthropic/written/refusal-fallback-iterations.json",
        _e("anthropic", "claude-opus-4-8", "refusal", "bio", fallback=True),
    ),
    Template(
        None,
        _e("anthropic", None, "error"),
        body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ),
    Template(
        "anthropic/written/error-400-output-blocked.json", _e("anthropic", None, "content_filter")
    ),
    Template(None, _e("anthropic", None, "error"), body="canceled"),
    Template(None, _e("anthropic", None, "error"), body="expired"),
)

RESPONSES = (
    Template(
        "gemini/written/stop-text-and-thoughts.json", _e("gemini", "gemini-2.5-pro", "stop"), 20
    ),
    Template(
        "gemini/finish-safety-blocked.json",
        _e("gemini", "gemini-1.5-flash", "content_filter", "hate_speech"),
        2,
    ),
    Template(
        "gemini/written/prompt-blocked-jailbreak.json",
        _e("vertex", "gemini-2.5-flash", "content_filter", "jailbreak"),
    ),
    Template("bedrock/converse-end-turn.json", _e("bedrock", None, "stop"), 12),
    Template(
        "bedrock/written/guardrail-intervened-output-pii.json",
        _e("bedrock", None, "content_filter", "email"),
    ),
    Template(
        "deepseek/written/response-content-filter.json",
        _e("deepseek", "deepseek-chat", "content_filter"),
    ),
    Template("groq/written/response.json", _e("groq", "llama-3.3-70b-versatile", "stop"), 8),
    Template("xai/written/response-reasoning.json", _e("xai", "grok-3-mini", "stop"), 8),
    Template(
        "anthropic/written/stream-refusal-cyber.json",
        _e("anthropic", "claude-opus-4-7", "refusal", "cyber"),
    ),
)

DOCUMENTS = (
    Template(
        "anthropic/vercel-refusal-no-details.json", _e("anthropic", "claude-fable-5", "refusal")
    ),
    Template(
        "openai-responses/written/failed-bio-policy.json",
        _e("openai-responses", GPT5, "content_filter", "bio_policy"),
    ),
    Template(
        "gemini/written/finish-recitation.json",
        _e("gemini", "gemini-2.5-flash", "content_filter", "recitation"),
    ),
    Template(
        "anthropic/written/stream-end-turn-basic.json",
        _e("anthropic", "claude-3-opus-latest", "stop"),
    ),
)

STREAMS = (
    Template(
        "anthropic/stream-refusal-cyber.sse",
        _e("anthropic", "claude-opus-4-7", "refusal", "cyber"),
    ),
    Template("openai-chat/stream-refusal.sse", _e("openai", GPT4O, "refusal")),
    Template(
        "gemini/written/stream-safety-cut-off.sse",
        _e("vertex", "gemini-2.5-flash", "content_filter", "dangerous_content"),
    ),
    Template(
        "anthropic/stream-end-turn-basic.sse", _e("anthropic", "claude-3-opus-latest", "stop")
    ),
    Template("openai-chat/stream-tool-calls.sse", _e("openai", GPT4O, "tool_calls")),
)

_UNKNOWN_RESULT = b'{"custom_id": "x", "result": {"type": "mystery"}}'
REFUSAL_NOTICE_FIXTURE = "anthropic/written/stream-refusal-cyber.json"


def _load(fixture: str, root: Path) -> Any:
    return orjson.loads((root / fixture).read_bytes())


def _id_letters(index: int) -> str:
    """Random-looking letters for a line's id, one of their own for each index (a
    multiplicative hash, one-to-one on 64-bit numbers)."""
    return "%016x" % (index * 0x9E3779B97F4A7C15 % 2**64)


_ID_PREFIX = re.compile(r"[A-Za-z]+[-_](?:01)?")
"""A vendor's id prefix (`chatcmpl-`, `msg_01`, `resp_`): real ids are random past it."""


def _with_id(body: Any, index: int) -> Any:
    # Real logs never repeat a response id; the classifier must not care either way. The
    # line's own letters go right after the vendor's prefix, where a real id's random
    # letters start, so that bodies of one kind share only the first bytes real ones share.
    if not isinstance(body, dict):
        return body
    for key in ("id", "responseId"):  # Gemini's is `responseId`
        value = body.get(key)
        if isinstance(value, str):
            prefix = _ID_PREFIX.match(value)
            cut = prefix.end() if prefix is not None else 0
            return {**body, key: f"{value[:cut]}{_id_letters(index)}-{value[cut:]}"}
    metrics = body.get("metrics")
    if isinstance(metrics, dict) and "latencyMs" in metrics:  # Bedrock has no id
        return {**body, "metrics": {**metrics, "latencyMs": index}}
    return body


def _pick(rng: random.Random, templates: tuple[Template, ...]) -> Template:
    return rng.choices(templates, weights=[t.weight for t in templates])[0]


def openai_batch_line(template: Template, index: int, root: Path) -> dict[str, Any]:
    """One OpenAI Batch output line for `template`."""
    custom_id = f"request-{index}"
    if template.fixture is None:
        return {
            "id": f"batch_req_{index}",
            "custom_id": custom_id,
            "response": None,
            "error": template.body,
        }
    body = _with_id(_load(template.fixture, root), index)
    return {
        "id": f"batch_req_{index}",
        "custom_id": custom_id,
        "response": {"status_code": template.status, "request_id": f"req_{index}", "body": body},
        "error": None,
    }


def anthropic_batch_line(template: Template, index: int, root: Path) -> dict[str, Any]:
    """One Anthropic Message Batches result line for `template`."""
    custom_id = f"request-{index}"
    if template.body in ("canceled", "expired"):
        return {"custom_id": custom_id, "result": {"type": template.body}}
    if template.fixture is None and not (
        isinstance(template.body, dict) and template.body.get("type") == "message"
    ):
        return {"custom_id": custom_id, "result": {"type": "errored", "error": template.body}}
    body = template.body if template.fixture is None else _load(template.fixture, root)
    if body.get("type") == "error":
        return {"custom_id": custom_id, "result": {"type": "errored", "error": body}}
    return {
        "custom_id": custom_id,
        "result": {"type": "succeeded", "message": _with_id(body, index)},
    }


def response_line(template: Template, index: int, root: Path) -> Any:
    assert template.fixture is not None
    return _with_id(_load(template.fixture, root), index)


LineMaker = Callable[[Template, int, Path], Any]


def _has_zstd() -> bool:
    try:
        import zstandard  # noqa: F401, PLC0415 - the zstd extra
    except ImportError:
        return False
    return True


def _opener(path: Path) -> Any:
    if path.suffix == ".gz":
        return gzip.open(path, "wb", compresslevel=5)
    if path.suffix in (".zst", ".zstd"):
        import zstandard  # noqa: PLC0415 - the zstd extra

        return zstandard.ZstdCompressor(level=3).stream_writer(path.open("wb"))
    return path.open("wb")


def write_lines(
    path: Path,
    templates: tuple[Template, ...],
    make: LineMaker,
    count: int,
    rng: random.Random,
    *,
    root: Path = FIXTURES,
    bad_lines: tuple[bytes, ...] = (),
) -> Truth:
    """Write `count` records (and `bad_lines` at random places) to a JSONL file."""
    truth = Truth(files=[str(path)])
    cache: dict[int, bytes] = {}
    bad_at = {rng.randrange(count + 1): line for line in bad_lines} if count else {}
    with _opener(path) as out:
        for index in range(count):
            if index in bad_at:
                out.write(bad_at.pop(index) + b"\n")
                truth.bad_records += 1
            template = _pick(rng, templates)
            key = id(template)
            if key not in cache or template.fixture is None:
                cache[key] = orjson.dumps(make(template, 0, root))
            line = orjson.dumps(make(template, index, root)) if index % 97 == 0 else cache[key]
            out.write(line + b"\n")
            truth.count(template.expected)
        for line in bad_at.values():
            out.write(line + b"\n")
            truth.bad_records += 1
    return truth


def exec_run(thread: str, outcome: str, root: Path = FIXTURES) -> Iterator[dict[str, Any]]:
    """The events of one `exec --json` run ending in `outcome` (success, refused, filtered)."""
    from refusals import normalize, notice  # noqa: PLC0415

    model = {"success": "anthropic:claude-sonnet-4-6", "refused": "anthropic:claude-opus-4-7"}
    yield {
        "type": "thread.started",
        "thread_id": thread,
        "model": model.get(outcome, "gemini:gemini-2.5-flash"),
    }
    yield {"type": "turn.started", "turn_id": "turn_0", "prompt_item_id": "item_0"}
    usage = {
        "input_tokens": 20,
        "cached_input_tokens": 0,
        "output_tokens": 7,
        "cache_write_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "reasoning_output_tokens": 0,
    }
    if outcome == "success":
        item = {"id": "item_1", "type": "agent_message", "text": "Done."}
        yield {"type": "item.completed", "item": item}
        yield {"type": "turn.completed", "usage": usage}
        code, stop = "success", "stop"
    else:
        refused = outcome == "refused"
        fixture = (
            REFUSAL_NOTICE_FIXTURE if refused else "gemini/written/prompt-blocked-jailbreak.json"
        )
        response = normalize((root / fixture).read_bytes())
        stop_details = response.stop_details
        text = notice(response)
        yield {
            "type": "refusal",
            "kind": response.finish_reason.value,
            "provider": response.provider,
            "original_model": response.model,
            "fallback_model": None,
            "request_id": response.request_id,
            "raw_stop_reason": response.raw_finish_reason,
            "category": stop_details.category if stop_details else None,
            "categories": list(stop_details.categories) if stop_details else [],
            "explanation": stop_details.explanation if stop_details else None,
            "recommended_model": stop_details.recommended_model if stop_details else None,
            "served_by_fallback": False,
            "scope": "session",
            "refused_item_id": "item_0",
            "retracted_item_ids": [],
            "notice": text,
        }
        code = "refused" if refused else "content_filtered"
        yield {"type": "turn.failed", "error": {"message": text}, "outcome_code": code}
        stop = response.finish_reason.value
    exit_codes = {"success": 0, "refused": 3, "content_filtered": 4}
    subtypes = {
        "success": "success",
        "refused": "error_refusal",
        "content_filtered": "error_content_filter",
    }
    yield {
        "type": "thread.completed",
        "subtype": subtypes[code],
        "is_error": code != "success",
        "outcome_code": code,
        "exit_code": exit_codes[code],
        "description": "as exec describes the outcome",
        "result": None,
        "stop_reason": stop,
        "served_by": None,
        "served_by_fallback": False,
        "usage": usage,
        "model_usage": {},
        "num_turns": 1,
        "requests": 1,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "total_cost_usd": None,
    }


EXEC_EXPECTED = {
    "success": _e("anthropic", "claude-sonnet-4-6", "stop"),
    "refused": _e("anthropic", "claude-opus-4-7", "refusal", "cyber"),
    "filtered": _e("vertex", "gemini-2.5-flash", "content_filter", "jailbreak"),
}


def generate(
    out_dir: str | os.PathLike[str], *, records: int = 200, seed: int = 0, root: Path = FIXTURES
) -> Truth:
    """Write a corpus of every layout under `out_dir`; return what a scan must count.

    `records` is the number of records in each of the three large JSONL files.
    """
    out = Path(out_dir)
    rng = random.Random(seed)
    truth = Truth()
    for sub in ("batches", "logs", "single", "streams", "exec"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    truth.merge(
        write_lines(
            out / "batches" / "openai-batch-output.jsonl",
            OPENAI_BATCH,
            openai_batch_line,
            records,
            rng,
            root=root,
            bad_lines=(b"this line is not JSON", b"[1, 2, 3]"),
        )
    )
    truth.merge(
        write_lines(
            out / "batches" / "anthropic-results.jsonl.gz",
            ANTHROPIC_BATCH,
            anthropic_batch_line,
            records,
            rng,
            root=root,
            bad_lines=(_UNKNOWN_RESULT,),
        )
    )
    # zstd where the extra is installed; a plain install (`refusals scan --demo-corpus`)
    # has gzip only.
    responses_path = out / "logs" / ("responses.jsonl.zst" if _has_zstd() else "responses.jsonl.gz")
    truth.merge(
        write_lines(
            responses_path,
            RESPONSES,
            response_line,
            records,
            rng,
            root=root,
            bad_lines=(b'{"truncated": ',),
        )
    )
    for template in DOCUMENTS:
        assert template.fixture is not None
        target = out / "single" / template.fixture.replace("/", "--")
        # Pretty-printed, as a response saved from a browser or a debugger looks.
        target.write_bytes(orjson.dumps(_load(template.fixture, root), option=orjson.OPT_INDENT_2))
        truth.count(template.expected)
        truth.files.append(str(target))
    for number, template in enumerate(STREAMS):
        assert template.fixture is not None
        name = template.fixture.replace("/", "--")
        target = out / "streams" / (name + ".gz" if number % 2 else name)
        with _opener(target) as stream:
            stream.write((root / template.fixture).read_bytes())
        truth.count(template.expected)
        truth.files.append(str(target))
    log = out / "exec" / "runs.events.jsonl"
    with log.open("wb") as events:
        for number, outcome in enumerate(["success"] * 5 + ["refused", "filtered"]):
            kind = "content_filtered" if outcome == "filtered" else outcome
            for event in exec_run(f"thread_{number}", kind, root):
                events.write(orjson.dumps(event) + b"\n")
            truth.count(EXEC_EXPECTED[outcome])
    truth.files.append(str(log))
    return truth


def write_bench_file(
    path: str | os.PathLike[str], target_bytes: int, *, seed: int = 0, root: Path = FIXTURES
) -> Truth:
    """A plain JSONL file of about `target_bytes`: OpenAI Batch, Anthropic results and
    mixed provider responses interleaved, as a gateway log of batch jobs looks; every
    line unique, about 5% of them refused or filtered."""
    rng = random.Random(seed)
    makers: list[tuple[tuple[Template, ...], LineMaker]] = [
        (OPENAI_BATCH, openai_batch_line),
        (ANTHROPIC_BATCH, anthropic_batch_line),
        (RESPONSES, response_line),
    ]
    samples: list[tuple[bytes, Expected]] = []
    weights: list[int] = []
    for templates, make in makers:
        for template in templates:
            samples.append((orjson.dumps(make(template, _UNIQUE, root)), template.expected))
            blocked = template.expected.finish in ("refusal", "content_filter")
            weights.append(template.weight * (1 if blocked else _ANSWERED_SCALE))
    truth = Truth(files=[str(path)])
    written = 0
    index = 0
    with open(path, "wb", buffering=4 * 1024 * 1024) as out:
        while written < target_bytes:
            for sample, expected in rng.choices(samples, weights, k=4096):
                # Every line unique, as in a real log: its ids carry the line's number
                # (response ids, letters of their own past the vendor's prefix).
                line = sample.replace(_UNIQUE_BYTES, b"%d" % index).replace(
                    _UNIQUE_ID_BYTES, _id_letters(index).encode()
                )
                index += 1
                out.write(line)
                out.write(b"\n")
                written += len(line) + 1
                truth.count(expected)
    return truth


_ANSWERED_SCALE = 3
"""Answers and errors weigh this much more in a bench file than in the corpus, so that
about 5% of its records are blocked, as in a production log (the corpus: 13%)."""
_UNIQUE = 918273645
"""The index a bench line is made with, replaced by the line's number."""
_UNIQUE_BYTES = b"%d" % _UNIQUE
_UNIQUE_ID_BYTES = _id_letters(_UNIQUE).encode()
assert _UNIQUE_BYTES not in _UNIQUE_ID_BYTES


def copy_fixture(fixture: str, target: str | os.PathLike[str], root: Path = FIXTURES) -> None:
    """Copy one recorded payload, bytes unchanged."""
    shutil.copyfile(root / fixture, target)
