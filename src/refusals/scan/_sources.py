"""Reading recorded logs: compression, layout recognition, and tasks over byte ranges.

Files are read as streams (gzip and zstd transparently), line by line, so memory does
not grow with the file. A large uncompressed line-oriented file is split into byte
ranges that processes scan in parallel; each range owns the lines that start inside it.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, cast

import orjson

from refusals.scan._classify import BadRecord, Classifier, record_from_response
from refusals.scan._record import ScanRecord
from refusals.scan._summary import Problem, Summary, Tally
from refusals.transport.streams import StreamDecoder, sniff_framing

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

CHUNK_BYTES = 16 * 1024 * 1024
"""Uncompressed line-oriented files larger than this are scanned in parts this size."""
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""A single JSON document larger than this is reported, not read into memory."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is a bad record (skipped without being held), and the scan goes on."""
MAX_INFLATION = 500
"""Decompressed bytes per compressed byte beyond which a file is taken for a bomb..."""
MIN_BOMB_BYTES = 1 << 30
"""...once it has inflated past 1 GiB (real logs compress 5-50 times)."""
READ_BYTES = 1024 * 1024

LINE_LAYOUTS = frozenset({"jsonl", "openai-batch", "anthropic-batch", "exec-events", "proxy-log"})
# Parts of a file scanned apart must not share state; an exec run spans lines.
SPLITTABLE_LAYOUTS = frozenset({"jsonl", "openai-batch", "anthropic-batch"})

_SCANNED_SUFFIXES = (".json", ".jsonl", ".ndjson", ".sse", ".txt", ".log", ".events")
_COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd")

# The first event of a stream recorded one JSON object per line.
_STREAM_EVENT_TYPES = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "ping", "message_delta"}
)

# Cohere v2 stream event types: message-start, content-delta, tool-call-start, ...
_COHERE_STREAM_PREFIXES = ("message-", "content-", "tool-call-", "tool-plan-", "citation-")
# Bedrock Converse stream events, decoded from the AWS event-stream into JSON lines.
_BEDROCK_STREAM_KEYS = frozenset({"messageStart", "contentBlockStart", "contentBlockDelta"})

Sink = Callable[[ScanRecord], None]


class UnreadableFile(Exception):
    """A file that cannot be opened, decompressed or read."""


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work: a whole file, or the lines starting in [start, end) of one."""

    path: str
    layout: str
    forced: bool = False
    start: int = 0
    end: int | None = None
    part: int = 0
    size: int = 0


@dataclass(slots=True)
class TaskResult:
    """What one task found; `lines` is the number of lines it read (for line offsets)."""

    task: Task
    summary: Summary
    lines: int
    spool: str | None = None


class _Inflation:
    """A decompressed stream that stops, with an error, where it inflates like a bomb.

    A thin proxy (not a buffered reader over one): the decompressor's own buffering keeps
    the lines that arrived before a truncated file's end.
    """

    def __init__(self, inner: IO[bytes], raw: io.FileIO) -> None:
        self._inner = inner
        self._raw = raw
        self._out = 0

    def _count(self, data: bytes) -> bytes:
        self._out += len(data)
        if self._out > MIN_BOMB_BYTES:
            compressed = max(self._raw.tell(), 1)
            if self._out > MAX_INFLATION * compressed:
                raise DecompressionBomb(
                    f"decompressed {self._out >> 20} MiB from {compressed} bytes (over "
                    f"{MAX_INFLATION} to 1): a decompression bomb; the rest is not read"
                )
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self._inner.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._inner.readline(size))

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()


class DecompressionBomb(ValueError):
    """A compressed file inflating far beyond what any log does."""


def open_stream(path: str) -> tuple[IO[bytes], str]:
    """`path` opened for reading, decompressed, and its compression (`gzip`, `zstd`, ``).

    Only regular files are read (a FIFO would hang, a device never ends), and a
    compressed stream that inflates like a bomb stops with `DecompressionBomb`.
    """
    if is_url(path):
        return _open_url(path)
    try:
        # Non-blocking, so that opening a FIFO does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableFile(NOT_REGULAR)
    os.set_blocking(fd, True)
    fileio = io.FileIO(fd, "rb")
    try:
        return _decompressed(fileio)
    except BaseException:
        fileio.close()
        raise


NOT_REGULAR = "not a regular file (a FIFO, device or socket is not read)"


def is_url(path: str) -> bool:
    """Whether `path` is an fsspec URL (`s3://`, `gs://`, `az://`, `file://`...)."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.replace("+", "").replace("-", "").isalnum()


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of `url`, and the path in it (credentials, endpoints: the
    filesystem's own configuration, e.g. AWS_* or FSSPEC_S3_ENDPOINT_URL)."""
    try:
        import fsspec  # noqa: PLC0415 - the remote extra, only for URLs
    except ImportError:
        raise UnreadableFile(
            "reading URLs needs fsspec (and s3fs, gcsfs or adlfs for the store): "
            "pip install 'refusals[s3]'"
        ) from None
    try:
        fs, found = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise UnreadableFile(f"cannot open {url.partition('://')[0]}:// URLs ({exc})") from None
    return fs, found


def _open_url(url: str) -> tuple[IO[bytes], str]:
    fs, found = _filesystem(url)
    try:
        remote = fs.open(found, "rb", block_size=READ_BYTES)
    except (OSError, ValueError) as exc:
        raise UnreadableFile(getattr(exc, "strerror", None) or str(exc)) from None
    raw = io.BufferedReader(remote, READ_BYTES)
    try:
        stream, compression = _open_decompressed(raw)
    except BaseException:
        raw.close()
        raise
    return stream, compression


def file_size(path: str) -> int:
    """The size of a file or URL, in bytes."""
    if is_url(path):
        fs, found = _filesystem(path)
        return int(fs.size(found))
    return os.path.getsize(path)


def _decompressed(fileio: io.FileIO) -> tuple[IO[bytes], str]:
    raw = io.BufferedReader(fileio, READ_BYTES)
    stream, compression = _open_decompressed(raw)
    if not compression:
        return stream, compression
    return cast(IO[bytes], _Inflation(stream, fileio)), compression


def _open_decompressed(raw: Any) -> tuple[IO[bytes], str]:
    try:
        magic = raw.peek(4)[:4]
    except OSError as exc:
        raw.close()
        raise UnreadableFile(exc.strerror or str(exc)) from None
    if magic.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=raw, mode="rb"), "gzip"  # type: ignore[return-value]
    if magic == ZSTD_MAGIC:
        try:
            import zstandard  # noqa: PLC0415 - optional, only for zstd files
        except ImportError:
            raw.close()
            raise UnreadableFile(
                "zstd-compressed; install the zstd extra: pip install 'refusals[zstd]'"
            ) from None
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(reader, READ_BYTES), "zstd"
    return raw, ""


def _read_error(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the compressed file is truncated (ended before its end-of-stream marker)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"cannot decompress: {exc}"


def _is_stream_event(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if isinstance(kind, str) and (
        kind in _STREAM_EVENT_TYPES or kind.startswith(("response.", *_COHERE_STREAM_PREFIXES))
    ):
        return True
    if obj.get("object") == "chat.completion.chunk" or "event_type" in obj:
        return True
    return not _BEDROCK_STREAM_KEYS.isdisjoint(obj)


def sniff_layout(head: bytes) -> str:
    """The layout of a file from its first bytes (decompressed)."""
    if sniff_framing(head[:12]) == "event-stream":
        return "stream"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith((b"data:", b"event:", b":", b"id:", b"retry:", b"[")):
        return "stream"
    if not text.startswith(b"{"):
        return "jsonl"  # each line is then reported as a bad record
    lines = [line for line in text.split(b"\n") if line.strip()]
    try:
        first = orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        # A document spread over lines, unless its later lines are records of their own.
        for line in lines[1:3]:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                return "json"
            return "jsonl"
        return "json"
    if _is_stream_event(first):
        return "stream"
    if isinstance(first, dict):
        if "custom_id" in first and "result" in first:
            return "anthropic-batch"
        if "custom_id" in first and ("response" in first or "error" in first):
            return "openai-batch"
        kind = first.get("type")
        if kind == "proxy.verdict":
            return "proxy-log"
        if isinstance(kind, str) and kind.startswith(("thread.", "turn.", "item.", "refusal")):
            return "exec-events"
    return "jsonl"


def file_layout(path: str) -> tuple[str, str]:
    """The layout and compression of the file at `path` (raises `UnreadableFile`).

    The layout never depends on how long the first line is: a first line longer than
    the 64 KiB head is read on (up to `MAX_LINE_BYTES`) before deciding.
    """
    stream, compression = open_stream(path)
    head = b""
    try:
        # Line by line: a truncated compressed file still shows its first lines (one read
        # of the whole head would fail at the cut and show nothing).
        while len(head) < _HEAD_BYTES and (line := stream.readline(_HEAD_BYTES - len(head))):
            head += line
        body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        if body.startswith(b"{") and b"\n" not in body:
            # The first line goes on past the head: read it whole, and the next one.
            head += stream.readline(MAX_LINE_BYTES)
            head += stream.readline(64 * 1024)
    except Exception as exc:  # zstandard raises its own error type
        if not head.strip():
            raise UnreadableFile(_read_error(exc)) from None
        # The scan reads what came before the damage, and reports the damage.
    finally:
        stream.close()
    return sniff_layout(head), compression


_HEAD_BYTES = 64 * 1024


def expand_paths(paths: Iterable[str]) -> Iterator[str]:
    """Files named, and the log files under directories named, in a stable order. A URL
    may name a file, a "directory" (a prefix) or a glob (`s3://bucket/logs/*.jsonl.gz`)."""
    for path in paths:
        if is_url(path):
            yield from _expand_url(path)
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    base = name
                    for suffix in _COMPRESSED_SUFFIXES:
                        base = base.removesuffix(suffix)
                    if base.endswith(_SCANNED_SUFFIXES) and not name.startswith("."):
                        yield os.path.join(root, name)
        else:
            yield path


def _expand_url(url: str) -> Iterator[str]:
    try:
        fs, found = _filesystem(url)
        if any(mark in found for mark in "*?["):
            names = sorted(fs.glob(found))
        elif fs.isdir(found):
            names = sorted(name for name in fs.find(found) if _is_log_name(name.rsplit("/", 1)[-1]))
        else:
            yield url
            return
    except UnreadableFile:
        yield url  # reported as unreadable when it is planned
        return
    for name in names:
        yield fs.unstrip_protocol(name)


def _is_log_name(name: str) -> bool:
    base = name
    for suffix in _COMPRESSED_SUFFIXES:
        base = base.removesuffix(suffix)
    return base.endswith(_SCANNED_SUFFIXES) and not name.startswith(".")


def plan(
    paths: Iterable[str], layout: str = "auto", chunk_bytes: int = CHUNK_BYTES, workers: int = 1
) -> Iterator[Task | Problem]:
    """The tasks that scan `paths`, or a `Problem` for a file that cannot be read.

    A file over `chunk_bytes` is split into parts of equal size, at most `chunk_bytes`, and
    as many as a multiple of `workers` when they stay over half of `chunk_bytes`: 3 parts
    on 2 workers would leave one idle for a third of the file, 4 smaller ones keep both
    busy."""
    for path in expand_paths(paths):
        try:
            size = file_size(path)
            found, compression = file_layout(path)
        except (OSError, UnreadableFile) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            yield Problem(path, 0, message or "cannot read the file")
            continue
        forced = layout != "auto"
        chosen = layout if forced else found
        if compression or chosen not in SPLITTABLE_LAYOUTS or size <= chunk_bytes:
            yield Task(path, chosen, forced, 0, None, 0, size)
            continue
        step = _part_bytes(size, chunk_bytes, workers)
        for part, start in enumerate(range(0, size, step)):
            end = min(start + step, size)
            yield Task(path, chosen, forced, start, end, part, end - start)


def _part_bytes(size: int, chunk_bytes: int, workers: int) -> int:
    """The size of a file's parts, all equal but the last: see `plan`."""
    parts = -(-size // chunk_bytes)
    even = -(-parts // workers) * workers
    if -(-size // even) * 2 >= chunk_bytes:
        parts = even
    return -(-size // parts)


_TINY = 8
_EMPTY_LINES = frozenset({b"", b"{}"})
_EMPTY_OBJECT = "unrecognised JSON object (keys: none)"
"""What the readers say of `{}`, said without asking them."""


def _count_deferred(
    classifier: Classifier, lines: list[tuple[int, bytes]], summary: Summary, tally: Tally
) -> None:
    """Count the lines `count_plain` declined, in file order (numbered as in the file)."""
    count = classifier.count_rest
    classify = classifier.classify
    loads = orjson.loads
    source = classifier.source
    for number, line in lines:
        try:
            if count(line, tally):
                continue
            record = classify(loads(line), number)
        except orjson.JSONDecodeError as exc:
            if line.strip():
                summary.add_problem(Problem(source, number, f"not JSON: {exc}"))
            continue
        except BadRecord as exc:
            summary.add_problem(Problem(source, number, str(exc)))
            continue
        if record is not None:
            summary.add(record)


def _skip_rest_of_line(stream: IO[bytes], line: bytes) -> None:
    """Read past the end of a line too long to keep, holding none of it."""
    while line and not line.endswith(b"\n"):
        line = stream.readline(READ_BYTES)


def _rest_of_line(stream: IO[bytes]) -> int:
    """The bytes from the stream's position through the end of its line (or file)."""
    length = 0
    while line := stream.readline(READ_BYTES):
        length += len(line)
        if line.endswith(b"\n"):
            break
    return length


class _Window(io.RawIOBase):
    """The next `size` bytes of a stream, as a stream of their own: a buffered reader
    over it reads a part's lines in C, where a generator counting each line's bytes up
    to the part's end would run for every line."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        super().__init__()
        self._stream = stream
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(min(len(buffer), self._left)) if self._left > 0 else b""
        buffer[: len(data)] = data
        self._left -= len(data)
        return len(data)


def _part(stream: IO[bytes], task: Task) -> IO[bytes]:
    """The lines of one part of a file: those that start in `[task.start, task.end)`."""
    assert task.end is not None
    start = task.start
    if start > 0:
        # The line running across `start` belongs to the part before.
        stream.seek(start - 1)
        start += _rest_of_line(stream) - 1
    # The line running across `end` belongs to this part, through its newline.
    stream.seek(task.end - 1)
    stop = task.end - 1 + _rest_of_line(stream)
    stream.seek(start)
    return io.BufferedReader(_Window(stream, max(stop - start, 0)), READ_BYTES)


def run_task(
    task: Task, sink: Sink | None = None, line_base: int = 0, *, typed: bool = True
) -> TaskResult:
    """Scan one task: count its records, and hand each to `sink` when given.

    Lines are numbered from `line_base + 1`. A bad record or an unreadable part of the
    file is counted as a problem; the scan goes on. `typed=False` reads every line the
    dict way (the reference the typed path is tested against; see `_classify`).
    """
    summary = Summary()
    if task.layout == "stream":
        record = _scan_stream(task, summary)
        if record is not None:
            summary.add(record)
            if sink is not None:
                sink(record)
        return TaskResult(task, summary, 1)
    if task.layout == "json":
        return TaskResult(task, summary, _scan_document(task, summary, sink))
    return TaskResult(task, summary, _scan_lines(task, summary, sink, line_base, typed))


_DEFERRED_LINES = 512
_DEFERRED_BYTES = 4 * 1024 * 1024
"""Lines a counting scan holds back for `Classifier.count_rest` before reading them."""


def _scan_lines(
    task: Task, summary: Summary, sink: Sink | None, line_base: int, typed: bool
) -> int:
    source = task.path
    classifier = Classifier(source, task.layout, forced=task.forced, typed=typed)
    read = classifier.read_line
    plain = classifier.count_plain
    classify = classifier.classify
    loads = orjson.loads
    add = summary.add
    tally = Tally(summary)
    # A scan that only counts reads most lines in `count_plain` and holds the others
    # back, to read them together: each loop keeps its own code in the caches. Counts
    # merge in any order; the held lines keep theirs (exec runs span lines).
    deferred: list[tuple[int, bytes]] = []
    deferred_bytes = 0
    number = line_base
    try:
        stream, _ = open_stream(source)
    except UnreadableFile as exc:
        summary.add_problem(Problem(source, 0, str(exc)))
        return 0
    try:
        # Lines are read by readline called from C (no generator frame between; a part
        # through its own window), each bounded so that one endless line cannot take
        # the memory.
        reader = stream if task.end is None else _part(stream, task)
        for line in iter(functools.partial(reader.readline, MAX_LINE_BYTES + 1), b""):
            number += 1
            size = len(line)
            # One test for the common line, neither too long nor tiny.
            if not _TINY < size <= MAX_LINE_BYTES:
                if size > MAX_LINE_BYTES:
                    _skip_rest_of_line(reader, line)
                    summary.add_problem(
                        Problem(source, number, f"a line over {MAX_LINE_BYTES >> 20} MiB, skipped")
                    )
                    continue
                if line.strip() in _EMPTY_LINES:
                    # Blank lines and `{}` are common filler: no reader is worth asking.
                    if line.strip():
                        summary.add_problem(Problem(source, number, _EMPTY_OBJECT))
                    continue
            if sink is None:
                if plain(line, tally):
                    continue
                deferred.append((number, line))
                deferred_bytes += size
                if len(deferred) >= _DEFERRED_LINES or deferred_bytes >= _DEFERRED_BYTES:
                    # Taken out first: a line that fails here is not read twice.
                    held, deferred, deferred_bytes = deferred, [], 0
                    _count_deferred(classifier, held, summary, tally)
                continue
            try:
                if (found := read(line)) is None:
                    record = classify(loads(line), number)
                else:
                    record = record_from_response(
                        found[0], source=source, line=number, layout=found[2], record_id=found[1]
                    )
            except orjson.JSONDecodeError as exc:
                if not line.strip():
                    continue
                summary.add_problem(Problem(source, number, f"not JSON: {exc}"))
                continue
            except BadRecord as exc:
                summary.add_problem(Problem(source, number, str(exc)))
                continue
            if record is not None:
                add(record)
                sink(record)
        # Inside the `try`: what fails here is reported as a failing line would be.
        held, deferred = deferred, []
        _count_deferred(classifier, held, summary, tally)
    except BrokenPipeError:
        raise  # the reader of our output went away (`| head`): not a fault of this file
    except Exception as exc:  # a truncated or corrupt compressed stream
        # Line numbers of a later part are relative until the engine shifts them.
        where = f" (after line {number})" if task.part == 0 else ""
        summary.add_problem(Problem(source, 0, _read_error(exc) + where))
        # The lines read before the damage count.
        try:
            _count_deferred(classifier, deferred, summary, tally)
        except Exception as again:
            summary.add_problem(Problem(source, 0, _read_error(again) + where))
    finally:
        stream.close()
    tally.add_to(summary)
    record = classifier.finish()
    if record is not None:
        add(record)
        if sink is not None:
            sink(record)
    return number - line_base


def _scan_document(task: Task, summary: Summary, sink: Sink | None) -> int:
    source = task.path
    try:
        stream, _ = open_stream(source)
        try:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
        finally:
            stream.close()
    except Exception as exc:
        summary.add_problem(Problem(source, 0, _read_error(exc)))
        return 0
    if len(data) > MAX_DOCUMENT_BYTES:
        summary.add_problem(Problem(source, 0, "a single JSON document over 256 MiB"))
        return 0
    try:
        record = Classifier(source, "json", forced=task.forced).classify(orjson.loads(data), 1)
    except orjson.JSONDecodeError as exc:
        summary.add_problem(Problem(source, 1, f"not JSON: {exc}"))
        return 1
    except BadRecord as exc:
        summary.add_problem(Problem(source, 1, str(exc)))
        return 1
    if record is not None:
        summary.add(record)
        if sink is not None:
            sink(record)
    return 1


def _scan_stream(task: Task, summary: Summary) -> ScanRecord | None:
    source = task.path
    decoder = StreamDecoder()
    try:
        stream, _ = open_stream(source)
    except UnreadableFile as exc:
        summary.add_problem(Problem(source, 0, str(exc)))
        return None
    try:
        while chunk := stream.read(READ_BYTES):
            decoder.feed(chunk)
        decoder.close()
    except Exception as exc:
        summary.add_problem(Problem(source, 0, _read_error(exc)))
        return None
    finally:
        stream.close()
    if decoder.events_seen == 0:
        response = decoder.response
        message = response.error.message if response.error is not None else None
        summary.add_problem(Problem(source, 1, message or "no stream events found"))
        return None
    return record_from_response(decoder.response, source=source, line=1, layout="stream")
