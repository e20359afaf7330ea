"""`--csv` cells never start like a spreadsheet formula (provider text is untrusted)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_a_formula_in_provider_text_is_made_inert(tmp_path: Path, start: str) -> None:
    body = orjson.loads((FIXTURES / "openai-chat" / "refusal.json").read_bytes())
    body["choices"][0]["message"]["refusal"] = f'{start}HYPERLINK("http://x","y")'
    body["model"] = f"{start}cmd|' /C calc'!A0"
    log = tmp_path / "log.jsonl"
    log.write_bytes(orjson.dumps(body) + b"\n")
    done = subprocess.run(
        [sys.executable, "-m", "refusals", "scan", str(log), "--csv"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    header, row = list(csv.reader(io.StringIO(done.stdout.decode())))
    cells = dict(zip(header, row, strict=True))
    assert cells["model"] == f"'{start}cmd|' /C calc'!A0"
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row)
