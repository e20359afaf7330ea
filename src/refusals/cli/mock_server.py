"""`refusals mock-server`: the mock provider on 127.0.0.1, for any app or SDK to call.

The first line written to standard output is the base URL it listens on (with `--port 0`
the port is a free one), so a script can read it: `URL=$(refusals mock-server --port 0 |
head -n1)`. It binds only loopback addresses unless `--allow-remote` says otherwise:
the mock answers anyone who can reach it and takes any key. Ctrl-C or SIGTERM stops it
cleanly (exit 0).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import NoReturn

import click

from refusals.mock.app import MockApp
from refusals.mock.rules import ScenarioFileError
from refusals.mock.scenarios import SCENARIOS
from refusals.mock.server import MockServer
from refusals.serving import is_loopback

EXIT_USAGE = 2
DEFAULT_PORT = 8765


def _fail(message: str) -> NoReturn:
    click.echo(f"refusals mock-server: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.command("mock-server")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
    help="Port to listen on; 0 picks a free one.",
)  # fmt: skip
@click.option(
    "--scenarios",
    "scenarios_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A TOML or JSON file of scenario rules (see docs/mock.md).",
)
@click.option("--allow-remote", is_flag=True, help="Allow a --host that is not a loopback address.")
@click.option("--list", "list_scenarios", is_flag=True, help="List the scenarios and exit.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="uvicorn's log level (info shows each request).",
)
def mock_server_command(
    *,
    host: str,
    port: int,
    scenarios_file: Path | None,
    allow_remote: bool,
    list_scenarios: bool,
    log_level: str,
) -> None:
    """Serve every provider's wire format on 127.0.0.1, with refusal, filter and fault
    scenarios, counting the requests it receives.

    Pick a scenario with the model name (`mock-refusal`), the `x-mock-scenario` header, or
    a prompt holding Anthropic's refusal test string; `GET /_mock/requests` lists what
    arrived. Paths, scenarios and SDK set-up: docs/mock.md.

    \b
    Examples:
      refusals mock-server --port 0          a free port; the URL is the first line
      refusals mock-server --list            the scenarios, one line each
      refusals mock-server --scenarios rules.toml
      curl -s 127.0.0.1:8765/v1/messages -H 'x-api-key: k' -d '{"model":
        "mock-refusal", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}'
    """
    if list_scenarios:
        width = max(len(name) for name in SCENARIOS)
        for name, summary in SCENARIOS.items():
            click.echo(f"{name:<{width}}  {summary}")
        return
    if not is_loopback(host) and not allow_remote:
        _fail(
            f"--host {host} is not a loopback address, and the mock answers anyone who can "
            "reach it; add --allow-remote to bind it anyway"
        )
    try:
        app = MockApp(scenarios_file)
    except ScenarioFileError as exc:
        _fail(str(exc))
    server = MockServer(app, host=host, port=port, log_level=log_level)
    try:
        server.start()
    except (RuntimeError, OSError) as exc:
        _fail(f"cannot listen on {host}:{port}: {exc}")
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    click.echo(server.base_url)
    click.echo("Serving the mock provider; Ctrl-C stops it. Paths: docs/mock.md", err=True)
    sys.stdout.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
