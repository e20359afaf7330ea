"""Mergeable scan summaries: bounded state, merged in any order with the same result.

A scan splits its input into tasks (files, or byte ranges of one file) and runs them on
any number of processes or machines; each task returns a `Summary`, and the summaries
are merged as they arrive. `merge` is associative and commutative, so the totals never
depend on scheduling, and every part has a fixed bound on its size, so memory does not
grow with the input.

The bounded parts are exact until they fill up. Beyond `capacity` distinct keys a
`BoundedCounter` keeps the keys with the smallest stable hash and adds the rest into one
`other` row: which keys are kept depends only on the set of keys seen, never on the
order they came in, so the merge stays exact for every key it keeps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from refusals.scan._record import ScanRecord, Stage

Key = tuple[str | None, ...]

GROUP_FIELDS = (
    "records",
    "prompt_blocks",
    "output_blocks",
    "fallbacks",
    "input_tokens",
    "output_tokens",
)
"""The counts kept for each (provider, model, finish reason, category) group."""

MAX_GROUPS = 4096
"""Distinct (provider, model, finish reason, category) groups kept exactly."""
MAX_EXPLANATIONS = 1024
"""Distinct explanations kept exactly (providers' texts are canned, so few in practice)."""
MAX_EXPLANATION_KEY_CHARS = 200
"""Explanations are grouped by their first characters, whitespace collapsed."""
MAX_PROBLEMS = 50
"""Bad records and unreadable files listed by location (all are counted)."""

_BLOCKED = frozenset({"refusal", "content_filter"})


def _stable_hash(key: Key) -> int:
    # Python's hash() of a str changes per process; partial summaries from several
    # processes must agree on which keys to keep.
    return int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "big")


@dataclass(slots=True)
class BoundedCounter:
    """Counts (a fixed-width vector of ints) per key, for at most `capacity` keys."""

    width: int
    capacity: int
    counts: dict[Key, list[int]] = field(default_factory=dict)
    other: list[int] = field(default_factory=list)
    _hashes: dict[Key, int] = field(default_factory=dict)
    _max_key: Key | None = None

    def __post_init__(self) -> None:
        if not self.other:
            self.other = [0] * self.width

    def add(self, key: Key, values: Iterable[int]) -> None:
        """Add `values` to the counts of `key`."""
        row = self.counts.get(key)
        if row is None:
            row = self._admit(key)
        for index, value in enumerate(values):
            row[index] += value

    def _admit(self, key: Key) -> list[int]:
        """The row `key` counts into: a new row, or `other` when the key is not kept."""
        digest = _stable_hash(key)
        if len(self.counts) >= self.capacity:
            assert self._max_key is not None
            if digest > self._hashes[self._max_key]:
                return self.other
            self._evict(self._max_key)
        row = [0] * self.width
        self.counts[key] = row
        self._hashes[key] = digest
        if self._max_key is None or digest > self._hashes[self._max_key]:
            self._max_key = key
        return row

    def _evict(self, key: Key) -> None:
        row = self.counts.pop(key)
        del self._hashes[key]
        for index, value in enumerate(row):
            self.other[index] += value
        self._max_key = max(self._hashes, key=self._hashes.__getitem__, default=None)

    def merge(self, other: BoundedCounter) -> None:
        """Add every count of `other` into this counter."""
        for index, value in enumerate(other.other):
            self.other[index] += value
        for key, row in other.counts.items():
            self.add(key, row)

    def items(self) -> Iterator[tuple[Key, list[int]]]:
        """The kept keys and their counts, in key order."""
        for key in sorted(self.counts, key=_sort_key):
            yield key, self.counts[key]

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": [[list(key), row] for key, row in self.items()],
            "other": list(self.other),
        }


def _sort_key(key: Key) -> tuple[tuple[bool, str], ...]:
    return tuple((part is not None, part or "") for part in key)


def explanation_key(text: str | None) -> str | None:
    """How explanations are grouped: whitespace collapsed, cut to a fixed length."""
    if not text:
        return None
    collapsed = " ".join(text.split())
    if len(collapsed) > MAX_EXPLANATION_KEY_CHARS:
        collapsed = collapsed[: MAX_EXPLANATION_KEY_CHARS - 3] + "..."
    return collapsed or None


@dataclass(slots=True, order=True, frozen=True)
class Problem:
    """A bad record (`line` from 1) or an unreadable file (`line` 0), and what was wrong."""

    source: str
    line: int
    message: str


BlockedKey = tuple[str | None, str | None, str, str | None, Stage | None, bool, str | None]
"""What a refused or filtered record counts as, its tokens aside: provider, model, finish
reason, category, stage, fallback and explanation (`ScanRecord`'s fields)."""

MAX_BLOCKED_KEYS = 1024
"""Distinct blocked keys a `Tally` holds before it adds them to its summary (explanations
can differ per record, and a tally must stay small)."""
MAX_PLAIN_KEYS = 4096
"""Distinct keys of plain answers a `Tally` holds before it adds its counts to its
summary (a log may name a new model on every line, and a compressed file is one task)."""


class Tally:
    """Records counted apart for a while, cheaply, for a scan that keeps no records.

    The caller counts a record neither refused nor filtered with `add`, by its (provider,
    model, finish reason, fallback) key (the finish reason a `str`, or a `FinishReason`:
    `add_to` writes its text), or in `plain` by the (provider, model, finish reason)
    verdict of a plain answer (not served by a fallback: the verdict as the readers give
    it, often the same tuple again, which hashes and compares faster than a new key; a
    new one through `add_new_plain`), and a refused or filtered one with `add_blocked`;
    `add_to` then adds the totals to a summary, and does so early, into the tally's
    `summary`, when a dict holds too many keys. Counts merge in any order, so the summary
    ends as if `Summary.add` had seen each record: the scan's hot loop pays one dict
    update per record instead of a group, a total and a finish count (and no record).
    """

    __slots__ = ("blocked", "counts", "plain", "summary")

    def __init__(self, summary: Summary | None = None) -> None:
        self.counts: dict[tuple[str | None, str | None, str, bool], int] = {}
        self.plain: dict[tuple[str | None, str | None, str], int] = {}
        self.summary = summary
        """Where `add`, `add_new_plain` and `add_blocked` put the counts when they hold
        too many keys (None: no bound)."""
        self.blocked: dict[BlockedKey, list[int]] = {}
        """Per blocked key: records, input tokens and output tokens."""

    def add(self, key: tuple[str | None, str | None, str, bool]) -> None:
        """Count one record neither refused nor filtered under `key` in `counts`."""
        counts = self.counts
        known = counts.get(key)
        if known is not None:
            counts[key] = known + 1
            return
        if len(counts) >= MAX_PLAIN_KEYS and self.summary is not None:
            self.add_to(self.summary)
        counts[key] = 1

    def add_new_plain(self, verdict: tuple[str | None, str | None, str]) -> None:
        """Count the first plain answer with `verdict` in `plain` (a caller counts the
        next ones itself: `plain[verdict] += 1`)."""
        plain = self.plain
        if len(plain) >= MAX_PLAIN_KEYS and self.summary is not None:
            self.add_to(self.summary)
        plain[verdict] = 1

    def add_blocked(self, key: BlockedKey, input_tokens: int, output_tokens: int) -> None:
        """Count one refused or filtered record in `blocked`."""
        row = self.blocked.get(key)
        if row is None:
            if len(self.blocked) >= MAX_BLOCKED_KEYS and self.summary is not None:
                self._add_blocked_to(self.summary)
            self.blocked[key] = [1, input_tokens, output_tokens]
            return
        row[0] += 1
        row[1] += input_tokens
        row[2] += output_tokens

    def add_to(self, summary: Summary) -> None:
        """Add every count to `summary`, and start again from none."""
        for (provider, model, finish, fallback), count in self.counts.items():
            summary.add_plain(provider, model, str.__str__(finish), fallback, count)
        self.counts.clear()
        for (provider, model, finish), count in self.plain.items():
            summary.add_plain(provider, model, str.__str__(finish), False, count)
        self.plain.clear()
        self._add_blocked_to(summary)

    def _add_blocked_to(self, summary: Summary) -> None:
        for key, (count, input_tokens, output_tokens) in self.blocked.items():
            summary.add_blocked(key, count, input_tokens, output_tokens)
        self.blocked.clear()


@dataclass(slots=True)
class Summary:
    """Counts over scanned records; `merge` combines partial summaries in any order."""

    records: int = 0
    bad_records: int = 0
    file_errors: int = 0
    groups: BoundedCounter = field(
        default_factory=lambda: BoundedCounter(len(GROUP_FIELDS), MAX_GROUPS)
    )
    explanations: BoundedCounter = field(
        default_factory=lambda: BoundedCounter(1, MAX_EXPLANATIONS)
    )
    problems: list[Problem] = field(default_factory=list)
    by_finish: dict[str, int] = field(default_factory=dict)
    """Records per finish reason, exact (there are seven finish reasons)."""
    sums: list[int] = field(default_factory=lambda: [0] * len(GROUP_FIELDS))
    """The group counts summed over every group, exact."""

    def add(self, record: ScanRecord) -> None:
        """Count one classified record."""
        # The hot path of every scan: one dict lookup and a few additions per record.
        self.records += 1
        finish = record.finish_reason
        groups = self.groups
        key = (record.provider, record.model, finish, record.category)
        row = groups.counts.get(key)
        if row is None:
            row = groups._admit(key)
        sums = self.sums
        row[0] += 1
        sums[0] += 1
        if record.served_by_fallback:
            row[3] += 1
            sums[3] += 1
        by_finish = self.by_finish
        by_finish[finish] = by_finish.get(finish, 0) + 1
        if finish in _BLOCKED:
            self._add_blocked_counts(
                row,
                (finish, record.category, record.stage, record.explanation),
                1,
                record.input_tokens,
                record.output_tokens,
            )

    def add_blocked(
        self, key: BlockedKey, count: int, input_tokens: int, output_tokens: int
    ) -> None:
        """Count `count` refused or filtered records of one key (see `Tally`), with their
        tokens summed, as `add` would each."""
        provider, model, finish, category, stage, fallback, explanation = key
        self.records += count
        group = (provider, model, finish, category)
        groups = self.groups
        row = groups.counts.get(group)
        if row is None:
            row = groups._admit(group)
        sums = self.sums
        row[0] += count
        sums[0] += count
        if fallback:
            row[3] += count
            sums[3] += count
        self.by_finish[finish] = self.by_finish.get(finish, 0) + count
        self._add_blocked_counts(
            row, (finish, category, stage, explanation), count, input_tokens, output_tokens
        )

    def _add_blocked_counts(
        self,
        row: list[int],
        block: tuple[str, str | None, Stage | None, str | None],
        count: int,
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        # Stages and tokens are counted for refused and filtered records only: tokens are
        # the cost of requests that produced no answer.
        finish, category, stage, explanation = block
        sums = self.sums
        index = 1 if stage == "prompt" else 2 if stage == "output" else 0
        if index:
            row[index] += count
            sums[index] += count
        row[4] += input_tokens
        sums[4] += input_tokens
        row[5] += output_tokens
        sums[5] += output_tokens
        text = explanation_key(explanation)
        if text is not None:
            self.explanations.add((finish, category, text), (count,))

    def add_plain(
        self, provider: str | None, model: str | None, finish: str, fallback: bool, count: int = 1
    ) -> None:
        """Count `count` records that were neither refused nor filtered, as `add` would.

        Such a record counts nothing but itself and its fallback (no stage, tokens or
        explanation), so it needs four values, not a whole record.
        """
        self.records += count
        key = (provider, model, finish, None)
        groups = self.groups
        row = groups.counts.get(key)
        if row is None:
            row = groups._admit(key)
        sums = self.sums
        row[0] += count
        sums[0] += count
        if fallback:
            row[3] += count
            sums[3] += count
        by_finish = self.by_finish
        by_finish[finish] = by_finish.get(finish, 0) + count

    def add_problem(self, problem: Problem) -> None:
        """Count a bad record (line >= 1) or an unreadable file (line 0)."""
        if problem.line > 0:
            self.bad_records += 1
        else:
            self.file_errors += 1
        self._keep_problems([problem])

    def _keep_problems(self, more: list[Problem]) -> None:
        # The first locations in (file, line) order: the same whatever the merge order.
        if len(self.problems) >= MAX_PROBLEMS and more and more[0] >= self.problems[-1]:
            return
        self.problems = sorted({*self.problems, *more})[:MAX_PROBLEMS]

    def merge(self, other: Summary) -> Summary:
        """Add `other` into this summary and return it."""
        self.records += other.records
        self.bad_records += other.bad_records
        self.file_errors += other.file_errors
        self.groups.merge(other.groups)
        for index, value in enumerate(other.sums):
            self.sums[index] += value
        for finish, count in other.by_finish.items():
            self.by_finish[finish] = self.by_finish.get(finish, 0) + count
        self.explanations.merge(other.explanations)
        if other.problems:
            self._keep_problems(sorted(other.problems))
        return self

    def shift_lines(self, offset: int) -> None:
        """Move bad-record lines by `offset` (a task that started inside a file)."""
        self.problems = [
            Problem(p.source, p.line + offset, p.message) if p.line > 0 else p
            for p in self.problems
        ]

    def totals(self) -> dict[str, int]:
        """The group counts summed over every record."""
        return dict(zip(GROUP_FIELDS, self.sums, strict=True))

    @property
    def refused(self) -> int:
        return self.by_finish.get("refusal", 0)

    @property
    def filtered(self) -> int:
        return self.by_finish.get("content_filter", 0)

    @property
    def errors(self) -> int:
        return self.by_finish.get("error", 0)

    @property
    def blocked_rate(self) -> float:
        """Refused and filtered records over all records (0 when there are none)."""
        return (self.refused + self.filtered) / self.records if self.records else 0.0

    def to_json(self) -> dict[str, Any]:
        """Every count, in a stable order: two summaries are equal when this is."""
        return {
            "records": self.records,
            "refused": self.refused,
            "content_filtered": self.filtered,
            "bad_records": self.bad_records,
            "file_errors": self.file_errors,
            "by_finish": dict(sorted(self.by_finish.items())),
            "totals": self.totals(),
            "group_fields": list(GROUP_FIELDS),
            "groups": self.groups.to_json(),
            "explanations": self.explanations.to_json(),
            "problems": [[p.source, p.line, p.message] for p in self.problems],
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Summary) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]
