"""Start-up stays cheap: `import refusals` and `refusals --help` load nothing heavy.

Each check runs in a fresh interpreter and asserts on `sys.modules`, never on time, so it
holds on a slow or busy machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import refusals
from refusals.cli import COMMANDS

# Modules a bare import or `--help` must not pay for: rendering, HTTP, wire formats,
# stream decoding and the commands themselves.
HEAVY_PREFIXES = (
    "rich",
    "httpx",
    "refusals.providers",
    "refusals.transport",
    "refusals.model",
    "refusals.stream",
)
COMMAND_MODULES = frozenset(module for module, _, _ in COMMANDS.values())


def _modules_after(code: str, out: Path) -> set[str]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(out.read_text())
    return set(loaded)


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(
        name
        for name in loaded
        if name in COMMAND_MODULES
        or any(name == prefix or name.startswith(prefix + ".") for prefix in HEAVY_PREFIXES)
    )


def test_import_refusals_loads_no_provider_transport_or_rendering_module(tmp_path: Path) -> None:
    loaded = _modules_after("import refusals", tmp_path / "modules.json")
    assert "refusals" in loaded
    assert _heavy(loaded) == []


def test_refusals_help_loads_no_command_module_provider_or_rendering_library(
    tmp_path: Path,
) -> None:
    code = (
        "sys.argv = ['refusals', '--help']\n"
        "from refusals.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
    )
    loaded = _modules_after(code, tmp_path / "modules.json")
    assert "refusals.cli" in loaded
    assert _heavy(loaded) == []


def test_a_public_name_still_loads_on_first_use(tmp_path: Path) -> None:
    code = "import refusals\nassert callable(refusals.normalize)\n"
    loaded = _modules_after(code, tmp_path / "modules.json")
    assert "refusals.providers" in loaded


def test_every_public_name_resolves_and_dir_lists_it() -> None:
    for name in refusals.__all__:
        assert getattr(refusals, name) is not None, name
    assert set(refusals.__all__) <= set(dir(refusals))
