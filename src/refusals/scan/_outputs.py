"""What a scan writes: per-record files (JSON lines, CSV, Parquet, resubmit list), the
summary table, and the rates chart.

Provider text (models, categories, explanations) is untrusted: the table passes it
through the terminal sanitiser; JSON escapes control characters by itself.
"""

from __future__ import annotations

import csv
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from refusals.sanitize import sanitize
from refusals.scan._record import COLUMNS, ScanRecord
from refusals.scan._summary import Summary

BATCH_LAYOUTS = frozenset({"anthropic-batch", "openai-batch"})
PARQUET_BATCH_ROWS = 65536
TOP_EXPLANATIONS = 10
TOP_MODELS = 20


def json_lines_writer(out: IO[bytes]) -> Callable[[ScanRecord], None]:
    """Write each record as one JSON object per line."""
    write = out.write
    dumps = orjson.dumps

    def sink(record: ScanRecord) -> None:
        write(dumps(record.to_json()) + b"\n")

    return sink


def csv_writer(out: IO[str], *, clean: bool = False) -> Callable[[ScanRecord], None]:
    """Write a header, then each record as one CSV row; `clean` sanitises text fields."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)

    def sink(record: ScanRecord) -> None:
        row = record.row()
        if clean:
            row = tuple(sanitize(v) if isinstance(v, str) else v for v in row)
        writer.writerow(tuple(_inert(v) if isinstance(v, str) else v for v in row))

    return sink


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _inert(text: str) -> str:
    """A cell a spreadsheet will not run: provider text starting like a formula gets a
    leading apostrophe (the OWASP advice for CSV injection)."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def same_model(first: str | None, second: str | None) -> bool:
    """Whether two model names name one model: equal but for case, or one the other with
    a dated snapshot suffix (`claude-opus-4-8` and `claude-opus-4-8-20260101`)."""
    if not first or not second:
        return False
    a, b = first.strip().lower(), second.strip().lower()
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return long.startswith(short) and _SNAPSHOT.fullmatch(long[len(short) :]) is not None


_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})")


def resubmit_writer(out: IO[bytes]) -> Callable[[ScanRecord], None]:
    """Write the refused batch requests that carry a recommended model, one per line.

    Anthropic's Batches API runs no server-side fallback, so these requests are the ones
    to send again to `recommended_model`; `custom_id` matches them to the batch input.
    """
    write = out.write

    def sink(record: ScanRecord) -> None:
        if (
            record.finish_reason == "refusal"
            and record.recommended_model
            and record.id
            and record.layout in BATCH_LAYOUTS
            # Sending it again to the model that refused would only be refused again.
            and not same_model(record.recommended_model, record.model)
        ):
            line = {
                "custom_id": record.id,
                "recommended_model": record.recommended_model,
                "model": record.model,
                "category": record.category,
                "source": record.source,
                "line": record.line,
            }
            write(orjson.dumps(line) + b"\n")

    return sink


def parquet_available() -> bool:
    try:
        importlib.import_module("pyarrow.parquet")
    except ImportError:
        return False
    return True


def parquet_schema() -> Any:
    """The Parquet schema of the records: `COLUMNS`, counts as int64, flags as bool."""
    pa: Any = importlib.import_module("pyarrow")
    types = {
        "line": pa.int64(),
        "served_by_fallback": pa.bool_(),
        "input_tokens": pa.int64(),
        "output_tokens": pa.int64(),
    }
    return pa.schema([(name, types.get(name, pa.string())) for name in COLUMNS])


def parquet_batch(rows: list[tuple[Any, ...]], schema: Any) -> Any:
    """Record rows (`ScanRecord.row()`) as one pyarrow record batch of `schema`."""
    pa: Any = importlib.import_module("pyarrow")
    columns = list(zip(*rows, strict=True))
    arrays = [
        pa.array(column, type=schema.field(index).type) for index, column in enumerate(columns)
    ]
    return pa.record_batch(arrays, schema=schema)


@dataclass
class ParquetWriter:
    """Records written to a Parquet file in row groups (needs the `parquet` extra)."""

    path: str
    _rows: list[tuple[Any, ...]] = field(default_factory=list)
    _writer: Any = None

    def __post_init__(self) -> None:
        pq: Any = importlib.import_module("pyarrow.parquet")
        self._schema = parquet_schema()
        self._writer = pq.ParquetWriter(self.path, self._schema)

    def __call__(self, record: ScanRecord) -> None:
        self._rows.append(record.row())
        if len(self._rows) >= PARQUET_BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        self._writer.write_batch(parquet_batch(self._rows, self._schema))
        self._rows.clear()

    def close(self) -> None:
        self._flush()
        self._writer.close()


def _rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _label(value: str | None) -> str:
    return sanitize(value) if value else "-"


def by_model(summary: Summary) -> list[dict[str, Any]]:
    """Per (provider, model): records, refused, filtered, errors, blocks, fallbacks, tokens."""
    rows: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    groups = list(summary.groups.items())
    if any(summary.groups.other):
        groups.append((("(other)", "(other)", None, None), summary.groups.other))
    for key, counts in groups:
        provider, model, finish = key[0], key[1], key[2]
        row = rows.setdefault(
            (provider, model),
            {
                "provider": provider,
                "model": model,
                "records": 0,
                "refusal": 0,
                "content_filter": 0,
                "error": 0,
                "prompt_blocks": 0,
                "output_blocks": 0,
                "fallbacks": 0,
                "input_tokens": 0,
                "output_tokens": 0,
            },
        )
        records, prompt, output, fallbacks, tokens_in, tokens_out = counts
        row["records"] += records
        if finish in ("refusal", "content_filter", "error"):
            row[finish] += records
        row["prompt_blocks"] += prompt
        row["output_blocks"] += output
        row["fallbacks"] += fallbacks
        row["input_tokens"] += tokens_in
        row["output_tokens"] += tokens_out
    return sorted(
        rows.values(), key=lambda r: (-r["records"], r["provider"] or "", r["model"] or "")
    )


def by_category(summary: Summary) -> list[dict[str, Any]]:
    """Per (finish reason, category) of refused and filtered records."""
    rows: dict[tuple[str, str | None], int] = {}
    for key, counts in summary.groups.items():
        finish, category = key[2], key[3]
        if finish in ("refusal", "content_filter"):
            assert finish is not None
            rows[(finish, category)] = rows.get((finish, category), 0) + counts[0]
    ordered = sorted(rows.items(), key=lambda item: (-item[1], item[0][0], item[0][1] or ""))
    return [
        {"finish_reason": finish, "category": category, "records": count}
        for (finish, category), count in ordered
    ]


def top_explanations(summary: Summary, limit: int = TOP_EXPLANATIONS) -> list[dict[str, Any]]:
    """The most frequent explanations of refused and filtered records."""
    ordered = sorted(
        summary.explanations.items(),
        key=lambda item: (-item[1][0], *(part or "" for part in item[0])),
    )
    return [
        {"finish_reason": k[0], "category": k[1], "explanation": k[2], "records": c[0]}
        for k, c in ordered[:limit]
    ]


def render_table(summary: Summary, console: Any) -> None:
    """Print the summary: by model, by category, top explanations, problems."""
    from rich import box  # noqa: PLC0415 - rich loads with the command
    from rich.table import Table  # noqa: PLC0415

    total = summary.records
    sums = summary.totals()
    console.print(
        f"[bold]{total}[/bold] records: [bold red]{summary.refused}[/bold red] refused "
        f"({_rate(summary.refused, total)}), [bold magenta]{summary.filtered}[/bold magenta] "
        f"filtered ({_rate(summary.filtered, total)}), {summary.errors} errors\n"
        f"blocked at the prompt: {sums['prompt_blocks']}, in the output: "
        f"{sums['output_blocks']}; served by a fallback: {sums['fallbacks']}\n"
        f"tokens spent on refused and filtered requests: {sums['input_tokens']} in, "
        f"{sums['output_tokens']} out"
    )
    table = Table(title="By model", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("provider:model", overflow="fold", min_width=20)
    for name in ("records", "refused", "filtered", "p/o", "fallback", "tokens"):
        table.add_column(name, justify="right", no_wrap=True)
    table.caption = (
        "p/o: blocked at the prompt / in the output; tokens: in/out spent on refused and "
        "filtered records"
    )
    models = by_model(summary)
    for row in models[:TOP_MODELS]:
        n = row["records"]
        table.add_row(
            f"{_label(row['provider'])}:{_label(row['model'])}",
            str(n),
            f"{row['refusal']} {_rate(row['refusal'], n)}",
            f"{row['content_filter']} {_rate(row['content_filter'], n)}",
            f"{row['prompt_blocks']}/{row['output_blocks']}",
            str(row["fallbacks"]),
            f"{row['input_tokens']}/{row['output_tokens']}",
        )
    if len(models) > TOP_MODELS:
        table.caption += f"; {len(models) - TOP_MODELS} more models in --json or --csv output"
    console.print(table)
    categories = by_category(summary)
    if categories:
        table = Table(
            title="Refused and filtered, by category",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("finish reason")
        table.add_column("category", overflow="fold")
        table.add_column("records", justify="right")
        table.add_column("of all records", justify="right")
        for row in categories:
            table.add_row(
                row["finish_reason"],
                _label(row["category"]),
                str(row["records"]),
                _rate(row["records"], total),
            )
        console.print(table)
    explanations = top_explanations(summary)
    if explanations:
        table = Table(
            title="Most frequent explanations",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("records", justify="right")
        table.add_column("finish reason")
        table.add_column("category", overflow="fold")
        table.add_column("explanation", overflow="fold")
        for row in explanations:
            table.add_row(
                str(row["records"]),
                row["finish_reason"] or "-",
                _label(row["category"]),
                _label(row["explanation"]),
            )
        console.print(table)
    render_problems(summary, console)


def render_problems(summary: Summary, console: Any) -> None:
    """Print the bad records and unreadable files, by location."""
    if not summary.problems:
        return
    from rich.text import Text  # noqa: PLC0415

    console.print(
        f"[bold yellow]{summary.bad_records} bad records, "
        f"{summary.file_errors} unreadable files[/bold yellow] (skipped; the rest was scanned):",
        soft_wrap=True,
    )
    for problem in summary.problems:
        where = problem.source if problem.line == 0 else f"{problem.source}:{problem.line}"
        console.print(Text(f"  {sanitize(where)}: {sanitize(problem.message)}"), soft_wrap=True)
    shown = len(summary.problems)
    if summary.bad_records + summary.file_errors > shown:
        console.print(f"  ... and {summary.bad_records + summary.file_errors - shown} more")


def write_chart(summary: Summary, path: str) -> None:
    """A PNG or SVG (by the file's extension) of refusal and filter rates by model and
    by category (needs the `chart` extra)."""
    matplotlib: Any = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # no display: files only
    plt: Any = importlib.import_module("matplotlib.pyplot")

    models = [row for row in by_model(summary) if row["records"]][:TOP_MODELS]
    categories = by_category(summary)[:TOP_MODELS]
    total = summary.records
    height = max(3.0, 0.4 * max(len(models), len(categories), 1) + 1.5)
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, height))
    # Each model's record count beside its name: a 100% rate over 2 records is no trend.
    names = [f"{r['provider'] or '-'}:{r['model'] or '-'} (n={r['records']})" for r in models]
    refused = [100 * r["refusal"] / r["records"] for r in models]
    filtered = [100 * r["content_filter"] / r["records"] for r in models]
    positions = list(range(len(models)))
    left.barh([p - 0.2 for p in positions], refused, height=0.4, label="refused", color="#c0392b")
    left.barh([p + 0.2 for p in positions], filtered, height=0.4, label="filtered", color="#8e44ad")
    left.set_yticks(positions, names, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("% of the model's records")
    left.set_title("Refusal and filter rates by model")
    left.set_xlim(0, 115)
    left.legend(loc="best")
    labels = [
        f"{r['category'] or '(none)'} ({r['finish_reason']}, n={r['records']})" for r in categories
    ]
    rates = [100 * r["records"] / total if total else 0.0 for r in categories]
    colors = ["#c0392b" if r["finish_reason"] == "refusal" else "#8e44ad" for r in categories]
    right.barh(range(len(categories)), rates, color=colors)
    right.set_yticks(range(len(categories)), labels, fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("% of all records")
    right.set_title("Refused and filtered records by category")
    for axis in (left, right):
        for bar in axis.patches:
            width = bar.get_width()
            if width > 0:
                axis.annotate(
                    f"{width:.1f}%",
                    (width, bar.get_y() + bar.get_height() / 2),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                )
    figure.suptitle(
        f"{total} records: {_rate(summary.refused, total)} refused, "
        f"{_rate(summary.filtered, total)} filtered"
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
