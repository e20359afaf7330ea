"""One classified record of a scan: the verdict on one recorded response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Stage = Literal["prompt", "output"]

COLUMNS = (
    "source",
    "line",
    "id",
    "layout",
    "provider",
    "model",
    "finish_reason",
    "raw_finish_reason",
    "category",
    "explanation",
    "notice",
    "stage",
    "served_by_fallback",
    "recommended_model",
    "input_tokens",
    "output_tokens",
)
"""Columns of `--json`, `--csv` and `--parquet`, in order (docs/scan.md describes each)."""


@dataclass(slots=True)
class ScanRecord:
    """The verdict on one record: where it was, what it said, and what it cost.

    `stage` is set on refused and filtered records: `prompt` when nothing of an answer
    came before the block, `output` when partial output was cut off. `id` is the batch
    `custom_id` when there is one, else the provider's response or request id.
    """

    source: str
    line: int
    id: str | None
    layout: str
    provider: str | None
    model: str | None
    finish_reason: str
    raw_finish_reason: str | None
    category: str | None
    explanation: str | None
    notice: str | None
    stage: Stage | None
    served_by_fallback: bool
    recommended_model: str | None
    input_tokens: int
    output_tokens: int

    def row(self) -> tuple[Any, ...]:
        """The values in `COLUMNS` order."""
        return (
            self.source,
            self.line,
            self.id,
            self.layout,
            self.provider,
            self.model,
            self.finish_reason,
            self.raw_finish_reason,
            self.category,
            self.explanation,
            self.notice,
            self.stage,
            self.served_by_fallback,
            self.recommended_model,
            self.input_tokens,
            self.output_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.row(), strict=True))
