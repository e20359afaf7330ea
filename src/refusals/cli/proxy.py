"""`refusals proxy`: the refusal-aware gateway on 127.0.0.1, for any tool to point at.

The first line written to standard output is the base URL it listens on (with port 0
a free one), so a script can read it. It binds only loopback addresses unless
`--allow-remote` says otherwise: it forwards the credentials it is given. Ctrl-C or
SIGTERM stops it cleanly (exit 0).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from refusals.cli._models import UsageError
from refusals.serving import is_loopback, uvicorn_options

if TYPE_CHECKING:
    from refusals.cli._config import Settings
    from refusals.proxy import ProxyApp

EXIT_USAGE = 2
DEFAULT_LISTEN = "127.0.0.1:8787"
DEFAULT_UPSTREAMS = (
    "anthropic=https://api.anthropic.com",
    "openai=https://api.openai.com",
    "gemini=https://generativelanguage.googleapis.com",
)
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SIZES = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
}


def _fail(message: str) -> NoReturn:
    click.echo(f"refusals proxy: {message}", err=True)
    sys.exit(EXIT_USAGE)


def parse_duration(text: str) -> float:
    """`90`, `90s`, `30m`, `1h`, `7d` → seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text.lower())
    if found is None or float(found.group(1)) <= 0:
        raise UsageError(f"--window {text!r} is not a duration (for example 90s, 30m, 1h, 7d)")
    return float(found.group(1)) * _UNITS[found.group(2)]


def parse_size(text: str) -> int:
    """`1048576`, `512k`, `64MB`, `1g` → bytes."""
    found = re.fullmatch(r"\s*(\d+)\s*([kmg]?b?)\s*", text.lower())
    if found is None:
        raise UsageError(f"--log-max-bytes {text!r} is not a size (for example 64MB, 512k)")
    return int(found.group(1)) * _SIZES[found.group(2)]


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--listen {text!r} is not HOST:PORT (for example {DEFAULT_LISTEN})")
    return host.strip("[]") or "127.0.0.1", int(port)


@click.command("proxy")
@click.option(
    "--listen", default=DEFAULT_LISTEN, show_default=True, metavar="HOST:PORT",
    help="Address to listen on; port 0 picks a free one.",
)  # fmt: skip
@click.option(
    "--upstream", "upstream_specs", multiple=True, metavar="NAME=URL",
    help="A provider to forward to (repeatable). Default: anthropic, openai and gemini "
    "at their public URLs.",
)  # fmt: skip
@click.option(
    "--window", default="1h", show_default=True, metavar="DURATION",
    help="How long a refused prompt stays blocked (90s, 30m, 1h, 7d).",
)  # fmt: skip
@click.option(
    "--store", "store_spec", metavar="SPEC",
    help="Where refused prompts are remembered: a SQLite path (default: in the state "
    "directory) or redis://HOST:PORT/DB (refusals[redis]).",
)  # fmt: skip
@click.option(
    "--state-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Directory for the store and the log [default: $XDG_STATE_HOME/refusals].",
)  # fmt: skip
@click.option(
    "--log", "log_file", type=click.Path(dir_okay=False, path_type=Path),
    help="The verdict log, JSON lines that `refusals scan` reads [default: "
    "proxy-verdicts.jsonl in the state directory].",
)  # fmt: skip
@click.option("--no-log", is_flag=True, help="Write no verdict log.")
@click.option(
    "--log-max-bytes", default="64MB", show_default=True, metavar="SIZE",
    help="Rotate the log past this size.",
)  # fmt: skip
@click.option(
    "--log-backups", default=5, show_default=True, type=click.IntRange(0, 1000),
    help="Rotated logs kept (proxy-verdicts.jsonl.1 ...).",
)  # fmt: skip
@click.option(
    "--timeout", default=600.0, show_default=True, type=click.FloatRange(min=0.1),
    help="Seconds to wait for an upstream's next byte.",
)  # fmt: skip
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 256),
    help="Processes serving the port; they share the store and the log, so a prompt "
    "refused in one is blocked in all.",
)  # fmt: skip
@click.option("--allow-remote", is_flag=True, help="Allow a --listen host that is not loopback.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="uvicorn's log level (info shows each request, query strings cut).",
)
def proxy_command(
    *,
    listen: str,
    upstream_specs: tuple[str, ...],
    window: str,
    store_spec: str | None,
    state_dir: Path | None,
    log_file: Path | None,
    no_log: bool,
    log_max_bytes: str,
    log_backups: int,
    timeout: float,
    workers: int,
    allow_remote: bool,
    log_level: str,
) -> None:
    """Forward model calls to their providers, and answer a resend of a refused or
    filtered prompt with the recorded refusal instead of sending it again.

    Point a tool at it with its base URL variable; the proxy forwards each call as it
    came (credentials untouched, never logged), streams as they arrive, and reads every
    answer on the fly. A resend of a refused prompt (same model and messages, within
    --window) is answered with the provider's own refusal and the header
    `x-refusals-resend-blocked: true`. The [policy] of refusals.toml can route a refused
    call to a fallback model instead. Set-up for Codex, Claude Code, Gemini CLI: docs/proxy.md.

    \b
    Examples:
      refusals proxy                                   public Anthropic, OpenAI, Gemini
      OPENAI_BASE_URL=http://127.0.0.1:8787/v1 codex exec "..."
      ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude -p "..."
      refusals proxy --upstream mock=http://127.0.0.1:8765 --listen 127.0.0.1:0
      refusals scan ~/.local/state/refusals/proxy-verdicts.jsonl
    """
    try:
        _require_aiohttp()
        from refusals.proxy import default_state_dir  # noqa: PLC0415 - needs aiohttp

        state = state_dir or default_state_dir()
        options = ProxyOptions(
            upstream_specs=upstream_specs or DEFAULT_UPSTREAMS,
            window=parse_duration(window),
            store_spec=store_spec,
            state_dir=str(state),
            log_path=None if no_log else str(log_file or state / "proxy-verdicts.jsonl"),
            log_max_bytes=parse_size(log_max_bytes),
            log_backups=log_backups,
            timeout=timeout,
            workspace=str(Path.cwd()),
        )
        _run(
            listen=listen,
            options=options,
            workers=workers,
            allow_remote=allow_remote,
            log_level=log_level,
        )
    except UsageError as exc:
        _fail(str(exc))


def _require_aiohttp() -> None:
    try:
        import aiohttp  # noqa: F401, PLC0415 - the proxy's upstream client
    except ImportError:
        raise UsageError(
            "the proxy needs aiohttp, its upstream client: pip install 'refusals[proxy]'"
        ) from None


WORKER_ENV = "REFUSALS_PROXY_WORKER"
"""Carries the options to each `--workers` process (spawned, so nothing else is shared)."""


@dataclass(frozen=True)
class ProxyOptions:
    """What builds one proxy app; a `--workers` process builds its own from these."""

    upstream_specs: tuple[str, ...]
    window: float
    store_spec: str | None
    state_dir: str
    log_path: str | None
    """None: no verdict log."""
    log_max_bytes: int
    log_backups: int
    timeout: float
    workspace: str
    """Where `refusals.toml` is looked for."""

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str) -> ProxyOptions:
        data = json.loads(text)
        data["upstream_specs"] = tuple(data["upstream_specs"])
        return cls(**data)


def build_app(options: ProxyOptions) -> tuple[ProxyApp, Settings]:
    """The app the options describe, with the settings it read; `UsageError` names what
    is wrong."""
    from refusals.cli._config import load_settings  # noqa: PLC0415 - loaded when it runs
    from refusals.proxy import (  # noqa: PLC0415
        ProxyApp,
        RedisStore,
        StoreError,
        VerdictLog,
        open_store,
        parse_upstream,
    )

    upstreams = []
    for spec in options.upstream_specs:
        try:
            upstreams.append(parse_upstream(spec))
        except ValueError as exc:
            raise UsageError(f"--upstream {exc}") from None
    names = [u.name for u in upstreams]
    if len(set(names)) != len(names):
        raise UsageError(f"--upstream names one provider twice: {', '.join(names)}")
    settings = load_settings(Path(options.workspace))
    try:
        store = open_store(options.store_spec, Path(options.state_dir))
        if isinstance(store, RedisStore):
            store.check()
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    log = None
    if options.log_path is not None:
        try:
            log = VerdictLog(Path(options.log_path), options.log_max_bytes, options.log_backups)
        except OSError as exc:
            raise UsageError(f"cannot open the log {options.log_path} ({exc.strerror})") from None
    app = ProxyApp(
        upstreams,
        store,
        window=options.window,
        policy=settings.policy,
        fallback_models=settings.fallback_models or (),
        log=log,
        timeout=options.timeout,
    )
    return app, settings


def worker_app() -> ProxyApp:
    """The app of one `--workers` process (uvicorn's factory), from `WORKER_ENV`."""
    return build_app(ProxyOptions.from_env(os.environ[WORKER_ENV]))[0]


def _run(
    *,
    listen: str,
    options: ProxyOptions,
    workers: int,
    allow_remote: bool,
    log_level: str,
) -> None:
    from refusals.proxy import ProxyServer  # noqa: PLC0415

    host, port = parse_listen(listen)
    if not is_loopback(host) and not allow_remote:
        raise UsageError(
            f"--listen {host} is not a loopback address, and the proxy forwards the keys "
            "it is sent to anyone who can reach it; add --allow-remote to bind it anyway"
        )
    app, settings = build_app(options)
    if workers > 1:
        # Checked here, once; each worker opens its own store and log.
        asyncio.run(app.aclose())
        _serve_workers(
            app,
            options=options,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            settings=settings,
        )
        return
    server = ProxyServer(app, host=host, port=port, log_level=log_level)
    try:
        server.start()
    except (RuntimeError, OSError) as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc}") from None
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    _banner(server.base_url, app, options, settings, workers)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()


def _banner(
    url: str, app: ProxyApp, options: ProxyOptions, settings: Settings, workers: int
) -> None:
    click.echo(url)
    for upstream in app.upstreams.values():
        click.echo(f"  {upstream.name:<12} -> {upstream.url}", err=True)
    click.echo(f"  store: {app.store.describe()}; window {options.window:g}s", err=True)
    click.echo(f"  log:   {options.log_path or 'off'}", err=True)
    if workers > 1:
        click.echo(f"  workers: {workers} processes, one store and one log", err=True)
    if settings.policy is not None:
        click.echo(f"  policy from {settings.sources[0]}", err=True)
    click.echo("Proxying; Ctrl-C stops it. Set-up for tools: docs/proxy.md", err=True)
    sys.stdout.flush()


def _serve_workers(
    app: ProxyApp,
    *,
    options: ProxyOptions,
    host: str,
    port: int,
    workers: int,
    log_level: str,
    settings: Settings,
) -> None:
    """`workers` processes serving one socket, under uvicorn's supervisor (it restarts a
    worker that dies; Ctrl-C or SIGTERM stops them all)."""
    import uvicorn  # noqa: PLC0415
    from uvicorn.config import STARTUP_FAILURE  # noqa: PLC0415
    from uvicorn.supervisors import Multiprocess  # noqa: PLC0415

    os.environ[WORKER_ENV] = options.to_env()
    config = uvicorn.Config(
        f"{__name__}:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        **uvicorn_options(log_level, "on", own_headers=False),
    )
    try:
        sock = config.bind_socket()
    except SystemExit:
        # uvicorn logs why and exits 1; the reason is in its log line above.
        raise UsageError(f"cannot listen on {host}:{port}") from None
    # Listening from now on: a connection made before the workers are up waits for one.
    sock.listen(config.backlog)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    _banner(f"http://{shown}:{bound[1]}", app, options, settings, workers)
    supervisor = Multiprocess(config, sockets=[sock])
    supervisor.run()
    sock.close()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        raise UsageError("a worker could not start; run without --workers to see why")
