"""`refusals scan`: count refusals and filter stops across recorded responses and logs."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from refusals.scan import (
    LAYOUTS,
    ScanRecord,
    SchedulerUnreachable,
    Summary,
    default_jobs,
    scan_dask,
    scan_local,
)
from refusals.scan._outputs import (
    ParquetWriter,
    csv_writer,
    json_lines_writer,
    render_problems,
    render_table,
    resubmit_writer,
    write_chart,
)

EXIT_RATE_EXCEEDED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: `| head` closed the pipe before all records were written."""

_EXTRAS = {
    "parquet": ("pyarrow.parquet", "--parquet needs pyarrow: pip install 'refusals[parquet]'"),
    "chart": ("matplotlib", "--chart needs matplotlib: pip install 'refusals[chart]'"),
    "dask": ("distributed", "--engine dask needs dask: pip install 'refusals[dask]'"),
}


def _usage(message: str) -> None:
    click.echo(f"refusals scan: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _require(extra: str) -> None:
    module, message = _EXTRAS[extra]
    try:
        importlib.import_module(module)
    except ImportError:
        _usage(message)


def _parse_rate(value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        _usage(f"--fail-on-rate {value!r}: expected a rate from 0 to 1, or a percentage like 5%")
    return rate


class _ProgressBar:
    """Bytes and records per second on stderr while the scan runs.

    A live bar on a terminal; elsewhere (a CI log) one plain line a second at most.
    """

    def __init__(self, total_bytes: int) -> None:
        self._start = time.monotonic()
        self._last = 0.0
        self._total = total_bytes
        self._line = ""
        self._progress: Any = None
        if not sys.stderr.isatty():
            return
        from rich.console import Console  # noqa: PLC0415 - only when shown
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task = self._progress.add_task("0 records", total=total_bytes or None)
        self._progress.start()

    def __call__(self, done_bytes: int, records: int) -> None:
        now = time.monotonic()
        elapsed = max(now - self._start, 1e-9)
        rates = f"{records} records, {records / elapsed:,.0f} records/s"
        if self._progress is not None:
            self._progress.update(self._task, completed=done_bytes, description=rates)
            return
        self._line = (
            f"refusals scan: {done_bytes / 1e6:,.1f} of {self._total / 1e6:,.1f} MB, "
            f"{done_bytes / 1e6 / elapsed:,.1f} MB/s, {rates}"
        )
        if now - self._last >= 1.0:
            self._last = now
            click.echo(self._line, err=True)
            self._line = ""

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self._line:
            click.echo(self._line, err=True)


def _total_bytes(paths: tuple[str, ...]) -> int:
    from refusals.scan import expand_paths  # noqa: PLC0415
    from refusals.scan._sources import UnreadableFile, file_size  # noqa: PLC0415

    total = 0
    for path in expand_paths(paths):
        with contextlib.suppress(OSError, UnreadableFile):
            total += file_size(path)
    return total


def _check_outputs(paths: tuple[str, ...], outputs: dict[str, str | None]) -> None:
    """Refuse, before anything is opened, an output that would destroy or feed an input:
    one that is an input file, lies in an input directory, is a directory or a FIFO, or
    is named by two options."""
    from refusals.scan._sources import is_url  # noqa: PLC0415

    paths = tuple(path for path in paths if not is_url(path))  # remote: nothing to destroy
    inputs = [os.path.realpath(path) for path in paths]
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        real = os.path.realpath(path)
        if real in seen:
            _usage(f"{option} and {seen[real]} name the same file {path}; give each its own")
        seen[real] = option
        if os.path.isdir(real):
            _usage(f"{option} {path} is a directory; name a file to write")
        if os.path.exists(real) and not os.path.isfile(real):
            _usage(f"{option} {path} is not a regular file (a FIFO or device); name a file")
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            _usage(f"{option} {path}: the directory {os.path.dirname(path) or '.'} does not exist")
        for given, source in zip(paths, inputs, strict=True):
            if real == source:
                _usage(f"{option} {path} is one of the inputs; writing it would destroy it")
            if os.path.isdir(source) and real.startswith(source.rstrip("/") + "/"):
                _usage(
                    f"{option} {path} is inside the input directory {given}, which the scan "
                    "reads; write it elsewhere"
                )


def _check_output_dir(paths: tuple[str, ...], out: str) -> None:
    """`--parquet-dir`: a new or empty directory, not inside an input directory; made here."""
    from refusals.scan._engine import prepare_parquet_dir  # noqa: PLC0415
    from refusals.scan._sources import is_url  # noqa: PLC0415

    if not is_url(out):
        real = os.path.realpath(out)
        for given in paths:
            source = os.path.realpath(given)
            if not is_url(given) and (real == source or real.startswith(source.rstrip("/") + "/")):
                _usage(f"--parquet-dir {out} is inside the input {given}; write it elsewhere")
    try:
        prepare_parquet_dir(out)
    except (ValueError, OSError, ImportError) as exc:
        _usage(f"--parquet-dir {out}: {exc}")


class _Staged:
    """An output written to a temporary file beside it and renamed into place at the
    end: an interrupted scan leaves the old file (or none), never a half-written one."""

    def __init__(self, path: str) -> None:
        self.path = path
        directory, name = os.path.split(os.path.abspath(path))
        stem, suffix = os.path.splitext(name)
        fd, self.temporary = tempfile.mkstemp(prefix=f".{stem}.", suffix=suffix, dir=directory)
        os.close(fd)

    def commit(self) -> None:
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temporary)


def _stage(path: str) -> _Staged:
    try:
        return _Staged(path)
    except OSError as exc:
        _usage(f"cannot write {path}: {exc.strerror}")
        raise  # unreachable: _usage exits


@click.command("scan", short_help="Count refusals and filter stops across recorded logs.")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--demo-corpus", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
    help="Write a demo corpus of real recorded payloads in every layout to DIR (then scan "
    "it), and print what a scan must count.",
)  # fmt: skip
@click.option(
    "--records", default=300, show_default=True, type=click.IntRange(1, 10_000_000),
    help="With --demo-corpus: records per large file.",
)  # fmt: skip
@click.option(
    "--format",
    "layout",
    type=click.Choice(LAYOUTS),
    default="auto",
    show_default=True,
    help="Layout of every file; recognised per file (and per line) when auto.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one verdict object per record.")
@click.option("--csv", "as_csv", is_flag=True, help="Print one CSV row per record.")
@click.option("--parquet", metavar="FILE", help="Write every record to a Parquet file.")
@click.option(
    "--parquet-dir",
    metavar="DIR",
    help="With --engine dask: the workers write every record to DIR (a shared path or a "
    "URL such as s3://bucket/out/), one part-NNNNN.parquet per task, in file and line order.",
)
@click.option("--chart", metavar="FILE", help="Draw refusal and filter rates (.png or .svg).")
@click.option(
    "--resubmit",
    metavar="FILE",
    help="Write the refused batch requests that carry a recommended model (JSON lines).",
)
@click.option("--summary-json", metavar="FILE", help="Write the summary counts as JSON.")
@click.option("--jobs", type=click.IntRange(1, 1024), help="Processes to use  [default: all cores]")
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where to run: this machine, or a Dask cluster.",
)
@click.option("--scheduler", metavar="ADDRESS", help="Dask scheduler address (--engine dask).")
@click.option(
    "--connect-timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1),
    metavar="SECONDS", help="How long to wait for the Dask scheduler to answer.",
)  # fmt: skip
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show bytes and records per second on stderr  [default: when stderr is a terminal]",
)
@click.option(
    "--fail-on-rate",
    metavar="RATE",
    help="Exit with code 1 when refused plus filtered records exceed RATE (0.05 or 5%).",
)
def scan_command(  # noqa: PLR0917 - one parameter per option, as click passes them
    paths: tuple[str, ...],
    demo_corpus: Path | None,
    records: int,
    layout: str,
    as_json: bool,
    as_csv: bool,
    parquet: str | None,
    parquet_dir: str | None,
    chart: str | None,
    resubmit: str | None,
    summary_json: str | None,
    jobs: int | None,
    engine: str,
    scheduler: str | None,
    connect_timeout: float,
    progress: bool | None,
    fail_on_rate: str | None,
) -> None:
    """Count refusals and content-filter stops across recorded responses and logs.

    PATH is a file or a directory (its .json, .jsonl, .ndjson, .sse, .txt, .log and
    .events files, also .gz or .zst): single responses, JSON lines, OpenAI Batch output,
    Anthropic Message Batches results, recorded streams, or `exec --json` event logs.

    \b
    Examples:
      refusals scan batch_output.jsonl           a summary table
      refusals scan logs/ --json > verdicts.jsonl
      refusals scan results.jsonl --resubmit resubmit.jsonl
      refusals scan logs/ --fail-on-rate 2%      exit 1 when more than 2% are blocked
      refusals scan s3-mirror/ --engine dask --scheduler tcp://10.0.0.5:8786
      refusals scan s3://logs/ --engine dask --scheduler tcp://10.0.0.5:8786 \\
          --parquet-dir s3://logs-out/verdicts/
      refusals scan --demo-corpus demo && refusals scan demo

    Exit codes: 0 scanned (bad records and unreadable files are reported, not fatal),
    1 --fail-on-rate exceeded, 2 usage error, 130 interrupted, 141 output pipe closed.
    """
    if demo_corpus is not None:
        if paths:
            _usage("--demo-corpus writes a corpus; scan it with a second command, not PATHs")
        _write_demo(demo_corpus, records)
        return
    if not paths:
        _usage("give a PATH to scan (a file or a directory), or --demo-corpus DIR to write one")
    from refusals.scan._sources import is_url  # noqa: PLC0415

    for path in paths:
        if not is_url(path) and not os.path.exists(path):
            _usage(f"{path} does not exist; give a file, a directory or a URL (s3://...)")
    if as_json and as_csv:
        _usage("--json and --csv both print to standard output; choose one")
    rate = _parse_rate(fail_on_rate)
    if chart is not None and not chart.lower().endswith((".png", ".svg")):
        _usage(f"--chart {chart}: the file name must end in .png or .svg")
    if parquet is not None or parquet_dir is not None:
        _require("parquet")
    if parquet_dir is not None and engine != "dask":
        _usage(
            "--parquet-dir is written by the Dask workers (--engine dask); on this machine "
            "use --parquet FILE"
        )
    if chart is not None:
        _require("chart")
    if engine == "dask":
        _require("dask")
        if scheduler is None:
            _usage("--engine dask needs --scheduler ADDRESS (for example tcp://host:8786)")
    elif scheduler is not None:
        _usage("--scheduler works with --engine dask")

    if parquet_dir is not None:
        _check_output_dir(paths, parquet_dir)
    _check_outputs(
        paths,
        {
            "--parquet": parquet,
            "--resubmit": resubmit,
            "--summary-json": summary_json,
            "--chart": chart,
        },
    )

    parts_done = False
    sinks: list[Callable[[ScanRecord], None]] = []
    closers: list[Callable[[], None]] = []
    staged: list[_Staged] = []
    try:
        stdout = sys.stdout.buffer
        if as_json:
            sinks.append(json_lines_writer(stdout))
        if as_csv:
            text_out = io.TextIOWrapper(stdout, encoding="utf-8", newline="", write_through=False)
            sinks.append(csv_writer(text_out, clean=sys.stdout.isatty()))
            closers.append(text_out.flush)
        if parquet is not None:
            staged.append(_stage(parquet))
            writer = ParquetWriter(staged[-1].temporary)
            sinks.append(writer)
            closers.append(writer.close)
        if resubmit is not None:
            staged.append(_stage(resubmit))
            resubmit_file = open(staged[-1].temporary, "wb")  # noqa: SIM115 - closed by closers
            sinks.append(resubmit_writer(resubmit_file))
            closers.append(resubmit_file.close)
        chart_out = summary_out = None
        if chart is not None:
            chart_out = _stage(chart)
            staged.append(chart_out)
        if summary_json is not None:
            summary_out = _stage(summary_json)
            staged.append(summary_out)

        sink: Callable[[ScanRecord], None] | None = None
        if len(sinks) == 1:
            sink = sinks[0]
        elif sinks:

            def sink(record: ScanRecord) -> None:
                for each in sinks:
                    each(record)

        show_progress = sys.stderr.isatty() if progress is None else progress
        bar = _ProgressBar(_total_bytes(paths)) if show_progress else None
        try:
            if engine == "dask":
                summary = scan_dask(
                    paths,
                    scheduler,
                    layout=layout,
                    progress=bar,
                    connect_timeout=connect_timeout,
                    sink=sink,
                    parquet_dir=parquet_dir,
                )
            else:
                summary = scan_local(
                    paths, layout=layout, jobs=jobs or default_jobs(), sink=sink, progress=bar
                )
        finally:
            if bar is not None:
                bar.stop()
            for close in closers:
                close()
            stdout.flush()
        _report(summary, as_json or as_csv, chart_out, summary_out)
        for out in staged:
            out.commit()
        staged.clear()
        parts_done = True
        if rate is not None and summary.blocked_rate > rate:
            click.echo(
                f"refusals scan: {100 * summary.blocked_rate:.2f}% of {summary.records} records "
                f"were refused or filtered, above --fail-on-rate {100 * rate:g}%",
                err=True,
            )
            sys.exit(EXIT_RATE_EXCEEDED)
    except KeyboardInterrupt:
        click.echo("refusals scan: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        _quiet_exit(EXIT_BROKEN_PIPE)
    except SchedulerUnreachable as exc:
        _usage(str(exc))
    finally:
        for out in staged:
            out.discard()
        if parquet_dir is not None and not parts_done:
            # An interrupted or failed scan leaves no parts that look like a whole one.
            from refusals.scan._engine import discard_parquet_dir  # noqa: PLC0415

            discard_parquet_dir(parquet_dir)


def _write_demo(target: Path, records: int) -> None:
    from refusals.scan.corpus import generate  # noqa: PLC0415 - only for this option

    if target.exists() and any(target.iterdir()):
        _usage(f"--demo-corpus {target}: the directory is not empty; give a new one")
    try:
        truth = generate(target, records=records)
    except OSError as exc:
        _usage(f"--demo-corpus {target}: cannot write there ({exc.strerror})")
    click.echo(
        f"wrote a demo corpus to {target}: {truth.records} records in every layout "
        f"({truth.bad_records} bad lines mixed in); `refusals scan {target}` counts them",
        err=True,
    )
    summary = {"records": truth.records, "bad_records": truth.bad_records}
    click.echo(orjson.dumps({**summary, "by_finish": truth.by_finish()}).decode())


def _quiet_exit(code: int) -> None:
    """Exit now without the interpreter reporting a broken pipe on its last flush."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _console(stream: Any) -> Any:
    """A rich console for `stream`: a terminal's own width, else one wide enough that no
    table is cut or wrapped (a pipe or a CI log has no width to fit). A closed pipe raises
    `BrokenPipeError` (exit 141), where rich would exit 1."""
    from rich.console import Console  # noqa: PLC0415

    console = Console(
        file=stream, highlight=False, width=None if stream.isatty() else _UNBOUNDED_WIDTH
    )

    def broken_pipe() -> None:
        raise BrokenPipeError

    console.on_broken_pipe = broken_pipe  # type: ignore[method-assign]
    return console


_UNBOUNDED_WIDTH = 4096


def _report(
    summary: Summary, records_on_stdout: bool, chart: _Staged | None, path: _Staged | None
) -> None:
    if records_on_stdout:
        render_problems(summary, _console(sys.stderr))
    else:
        render_table(summary, _console(sys.stdout))
    if chart is not None:
        write_chart(summary, chart.temporary)
    if path is not None:
        with open(path.temporary, "wb") as out:
            out.write(orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
