"""Engines: run scan tasks in this process, on local processes, or on a Dask cluster.

Each task returns a partial `Summary`; merging is associative and commutative, so the
result is the same whatever the number of processes or the order tasks finish in.
Records (for `--json`, `--csv`, `--parquet`, `--resubmit`) reach the caller in file
and line order: a worker process spools its task's records to a temporary file, read
back in task order, so memory stays bounded however large a task is. On Dask the
workers can also write the records themselves, one Parquet file per task in a directory
(`parquet_dir`), named in task order.
"""

from __future__ import annotations

import importlib
import os
import signal
import tempfile
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import orjson

from refusals.scan._outputs import parquet_batch, parquet_schema
from refusals.scan._record import ScanRecord
from refusals.scan._sources import Sink, Task, TaskResult, is_url, plan, run_task
from refusals.scan._summary import Problem, Summary

Progress = Callable[[int, int], None]
"""Called with the bytes and records done so far, as tasks finish."""


def default_jobs() -> int:
    """All the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _pool_task(task: Task, spool_dir: str | None) -> TaskResult:
    """Run one task in a worker process; spool its records when they are wanted."""
    if spool_dir is None:
        return run_task(task)
    handle, path = tempfile.mkstemp(prefix="scan-", suffix=".jsonl", dir=spool_dir)
    with os.fdopen(handle, "wb", buffering=1024 * 1024) as spool:
        dumps = orjson.dumps
        write = spool.write

        def sink(record: ScanRecord) -> None:
            write(dumps(record.row()) + b"\n")

        result = run_task(task, sink)
    result.spool = path
    return result


def _replay(result: TaskResult, line_base: int, sink: Sink) -> None:
    assert result.spool is not None
    try:
        with open(result.spool, "rb") as spool:
            for line in spool:
                row: list[Any] = orjson.loads(line)
                row[1] += line_base
                sink(ScanRecord(*row))
    finally:
        os.unlink(result.spool)


def scan_local(
    paths: Iterable[str],
    *,
    layout: str = "auto",
    jobs: int | None = None,
    sink: Sink | None = None,
    progress: Progress | None = None,
    chunk_bytes: int | None = None,
) -> Summary:
    """Scan files and directories on this machine with `jobs` processes (all cores).

    `sink` receives every record in file and line order. Unreadable files and bad
    records are counted in the summary's problems; nothing aborts the scan.
    """
    jobs = jobs or default_jobs()
    summary = Summary()
    options = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    items = list(plan(paths, layout, workers=jobs, **options))
    tasks = [item for item in items if isinstance(item, Task)]
    for item in items:
        if isinstance(item, Problem):
            summary.add_problem(item)
    bases: dict[str, int] = {}
    done_bytes = 0

    def absorb(result: TaskResult, replayed: bool) -> None:
        nonlocal done_bytes
        path = result.task.path
        base = bases.get(path, 0) if result.task.part else 0
        if replayed and base:
            result.summary.shift_lines(base)
        bases[path] = base + result.lines
        summary.merge(result.summary)
        done_bytes += result.task.size
        if progress is not None:
            progress(done_bytes, summary.records)

    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            base = bases.get(task.path, 0) if task.part else 0
            absorb(run_task(task, sink, base), replayed=False)
        return summary
    spool_dir = tempfile.mkdtemp(prefix="refusals-scan-") if sink is not None else None
    try:
        workers = min(jobs, len(tasks))
        with ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint) as pool:
            # A bounded window of tasks in flight, taken back in order: records keep
            # their file order and finished results never pile up in memory.
            window: deque[Future[TaskResult]] = deque()
            try:
                for task in tasks:
                    window.append(pool.submit(_pool_task, task, spool_dir))
                    if len(window) >= 2 * jobs:
                        _take(window.popleft().result(), bases, sink, absorb)
                while window:
                    _take(window.popleft().result(), bases, sink, absorb)
            except BaseException:
                # A closed output pipe or Ctrl-C: the tasks not started are not wanted.
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    finally:
        if spool_dir is not None:
            for name in os.listdir(spool_dir):
                os.unlink(os.path.join(spool_dir, name))
            os.rmdir(spool_dir)
    return summary


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the parent stops the scan, and workers
    # that raised KeyboardInterrupt too would each print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _take(
    result: TaskResult,
    bases: dict[str, int],
    sink: Sink | None,
    absorb: Callable[[TaskResult, bool], None],
) -> None:
    if sink is not None and result.spool is not None:
        base = bases.get(result.task.path, 0) if result.task.part else 0
        _replay(result, base, sink)
    absorb(result, True)


def summarize_file(path: str, layout: str = "auto") -> Summary:
    """The summary of one file, whole (the unit of work of a distributed scan).

    Import this from Ray, Spark or any job runner: summaries of any files, merged with
    `Summary.merge` in any order, equal one scan over all of them.
    """
    summary = Summary()
    for item in plan([path], layout, chunk_bytes=2**62):
        if isinstance(item, Problem):
            summary.add_problem(item)
        else:
            summary.merge(run_task(item).summary)
    return summary


class SchedulerUnreachable(Exception):
    """The Dask scheduler did not answer; the message says where and what to check."""


def scan_dask(
    paths: Iterable[str],
    scheduler: Any,
    *,
    layout: str = "auto",
    progress: Progress | None = None,
    connect_timeout: float = 10.0,
    sink: Sink | None = None,
    chunk_bytes: int | None = None,
    parquet_dir: str | None = None,
) -> Summary:
    """Scan on a Dask cluster: the local engine's tasks (a large uncompressed file split
    into byte ranges), run by the workers, their summaries merged in file order.

    `scheduler` is a scheduler address (`tcp://host:8786`) or a `distributed.Client`.
    Every worker needs `refusals` installed and the files at the same paths; paths are
    made absolute here, since a worker's working directory is not ours. `sink` receives
    every record in file and line order, as the local engine gives them (the workers send
    each task's records back). With `parquet_dir` (a directory every worker can write:
    a shared path or an fsspec URL), each worker writes its task's records there as
    `part-NNNNN.parquet`, numbered in task order, so the files read in name order are the
    records in file and line order. A scheduler that does not answer within
    `connect_timeout` seconds raises `SchedulerUnreachable`.
    """
    # Imported here: the dask extra is optional, and its API is untyped.
    distributed: Any = importlib.import_module("distributed")

    absolute = [path if is_url(path) else os.path.abspath(path) for path in paths]
    options = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    summary = Summary()
    tasks: list[Task] = []
    owned = not isinstance(scheduler, distributed.Client)
    if owned:
        try:
            client = distributed.Client(scheduler, timeout=connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise SchedulerUnreachable(
                f"cannot reach the Dask scheduler at {scheduler} within {connect_timeout:g} s "
                f"({type(exc).__name__}); is it running, and is the address right?"
            ) from None
    else:
        client = scheduler
    out = None
    if parquet_dir is not None:
        out = parquet_dir if is_url(parquet_dir) else os.path.abspath(parquet_dir)
    shifts: list[Any] = []
    try:
        # Parts in a multiple of the cluster's threads, as the local engine's processes.
        threads = sum(client.nthreads().values())
        for item in plan(absolute, layout, workers=max(threads, 1), **options):
            if isinstance(item, Problem):
                summary.add_problem(item)
            else:
                tasks.append(item)
        futures = client.map(
            _dask_task,
            tasks,
            range(len(tasks)),
            keep=sink is not None,
            out=out,
            pure=False,
        )
        order = {future.key: index for index, future in enumerate(futures)}
        results: dict[int, tuple[TaskResult, list[tuple[Any, ...]] | None, bool]] = {}
        bases: dict[str, int] = {}
        following = 0
        done_bytes = 0
        records = 0
        for future in distributed.as_completed(futures):
            index = order[future.key]
            results[index] = future.result()
            future.release()
            done_bytes += tasks[index].size
            records += results[index][0].summary.records
            if progress is not None:
                progress(done_bytes, records)
            # Absorb the finished prefix in task order: line numbers of a later part of a
            # file follow the lines of the parts before it, and records keep file order.
            while following in results:
                result, rows, written = results.pop(following)
                path = result.task.path
                base = bases.get(path, 0) if result.task.part else 0
                if written:
                    # A later part of a split file: its records' lines follow the parts
                    # before it, known only now. A worker rewrites its file with them.
                    shifts.append(client.submit(_shift_part, out, following, base, pure=False))
                if base:
                    result.summary.shift_lines(base)
                bases[path] = base + result.lines
                summary.merge(result.summary)
                if sink is not None and rows is not None:
                    for row in rows:
                        shifted = list(row)
                        shifted[1] += base
                        sink(ScanRecord(*shifted))
                following += 1
        for shift in shifts:
            shift.result()
        return summary
    finally:
        if owned:
            client.close()


def _dask_task(
    task: Task, index: int, keep: bool, out: str | None
) -> tuple[TaskResult, list[tuple[Any, ...]] | None, bool]:
    """One task on a worker: its result, its records (as rows) when they are wanted, and
    whether it wrote a Parquet file whose lines must still be shifted."""
    if not keep and out is None:
        return run_task(task), None, False
    rows: list[tuple[Any, ...]] = []

    def sink(record: ScanRecord) -> None:
        rows.append(record.row())

    result = run_task(task, sink)
    unshifted = False
    if out is not None and rows:
        # The first part of a file starts at line 1: its file is final at once.
        unshifted = bool(task.part)
        _write_part(out, index, rows, final=not unshifted)
    return result, (rows if keep else None), unshifted


PART_NAME = "part-{:05d}.parquet"
"""A task's Parquet file in `parquet_dir`: numbered in task order."""
_UNSHIFTED = ".unshifted"
_WRITING = ".writing"


def _write_part(out: str, index: int, rows: list[tuple[Any, ...]], *, final: bool) -> None:
    pa: Any = importlib.import_module("pyarrow")
    pq: Any = importlib.import_module("pyarrow.parquet")
    schema = parquet_schema()
    table = pa.Table.from_batches([parquet_batch(rows, schema)], schema=schema)
    fs, root = _output_fs(out)
    name = f"{root.rstrip('/')}/{PART_NAME.format(index)}"
    target = name if final else name + _UNSHIFTED
    # Written under another name first, so a file of the final name is always whole.
    with fs.open(target + _WRITING, "wb") as handle:
        pq.write_table(table, handle)
    fs.mv(target + _WRITING, target)


def _shift_part(out: str, index: int, base: int) -> None:
    """Add `base` to the line numbers of a later part's file, and give it its final name."""
    pc: Any = importlib.import_module("pyarrow.compute")
    pq: Any = importlib.import_module("pyarrow.parquet")
    fs, root = _output_fs(out)
    name = f"{root.rstrip('/')}/{PART_NAME.format(index)}"
    with fs.open(name + _UNSHIFTED, "rb") as handle:
        table = pq.read_table(handle)
    position = table.schema.get_field_index("line")
    table = table.set_column(position, "line", pc.add(table.column("line"), base))
    with fs.open(name + _WRITING, "wb") as handle:
        pq.write_table(table, handle)
    fs.mv(name + _WRITING, name)
    fs.rm(name + _UNSHIFTED)


def _output_fs(out: str) -> tuple[Any, str]:
    fsspec: Any = importlib.import_module("fsspec")
    fs, root = fsspec.core.url_to_fs(out)
    return fs, root


def prepare_parquet_dir(out: str) -> None:
    """Create the output directory of `parquet_dir`; one that holds files is refused, so
    that no earlier scan's parts mix with this one's."""
    fs, root = _output_fs(out if is_url(out) else os.path.abspath(out))
    if fs.exists(root):
        if not fs.isdir(root):
            raise ValueError(f"{out} is a file; --parquet-dir needs a directory")
        if fs.ls(root):
            raise ValueError(f"{out} is not empty; give a new or empty directory")
    else:
        fs.makedirs(root, exist_ok=True)


def discard_parquet_dir(out: str) -> None:
    """Remove what a scan that did not finish wrote to `parquet_dir` (which was new or
    empty when it started)."""
    try:
        fs, root = _output_fs(out if is_url(out) else os.path.abspath(out))
        for name in fs.ls(root, detail=False):
            fs.rm(name)
    except (OSError, ValueError, ImportError):
        pass  # nothing there, or nothing that can be reached now: nothing to remove
