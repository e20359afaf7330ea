"""Build and drive the Rust differential harness in `tests/differential/rust/`.

The harness is the reference module (`rust/src/refusal.rs`, a verbatim copy of
`reference/refusal.rs`) compiled with the Debian-packaged serde_json, so it builds
offline. Both the differential test and `gen_unicode.py` use it through this module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HARNESS_DIR = Path(__file__).resolve().parent / "rust"
TARGET_DIR = HARNESS_DIR / "target"
BINARY = TARGET_DIR / "release" / "refusal-harness"
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")
"""Where `apt-get install librust-serde-json-dev` puts the crate sources cargo builds from."""

BUILD_TIMEOUT_SECONDS = 600


class HarnessUnavailableError(RuntimeError):
    """The toolchain or the offline crate sources the harness needs are not installed."""


def unavailable_reason() -> str | None:
    """Why the harness cannot be built here, or None when it can."""
    if shutil.which("cargo") is None:
        return "cargo is not installed, so the Rust reference harness cannot be built"
    if not any(DEBIAN_REGISTRY.glob("serde_json-1.*/Cargo.toml")):
        return (
            f"serde_json sources are not under {DEBIAN_REGISTRY} "
            "(apt-get install librust-serde-json-dev); the harness builds offline only"
        )
    return None


def build() -> Path:
    """Build the harness (a no-op when it is up to date) and return the binary's path."""
    reason = unavailable_reason()
    if reason is not None:
        raise HarnessUnavailableError(reason)
    cargo = shutil.which("cargo")
    assert cargo is not None
    # The cwd makes cargo read rust/.cargo/config.toml (the Debian source replacement).
    env = {**os.environ, "CARGO_TARGET_DIR": str(TARGET_DIR)}
    result = subprocess.run(
        [cargo, "build", "--release", "--offline", "--quiet"],
        cwd=HARNESS_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"cargo build of the reference harness failed:\n{result.stderr}")
    return BINARY


def run_cases(binary: Path, cases: Iterable[Mapping[str, Any]]) -> list[str]:
    """`refusal_reason` of the reference for each case, computed in one process."""
    lines = [json.dumps(case, ensure_ascii=True) for case in cases]
    payload = "".join(line + "\n" for line in lines)
    result = subprocess.run(
        [str(binary)],
        input=payload.encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"reference harness failed:\n{result.stderr.decode()}")
    # Split on "\n" only: serde_json leaves U+0085, U+2028 and U+2029 unescaped, and
    # str.splitlines() would break reasons at them.
    records = [json.loads(line) for line in result.stdout.decode().split("\n") if line]
    if len(records) != len(lines):
        raise RuntimeError(f"harness answered {len(records)} of {len(lines)} cases")
    reasons: list[str] = []
    for line, record in zip(lines, records, strict=True):
        if "reason" not in record:
            raise RuntimeError(f"harness rejected case {line}: {record.get('error')}")
        reasons.append(record["reason"])
    return reasons


@dataclass(frozen=True, slots=True)
class CharFacts:
    """What Rust's `char` methods say about one character."""

    is_uppercase: bool = False
    is_lowercase: bool = False
    is_whitespace: bool = False
    to_lowercase: str | None = None
    """None when the lowercase form is the character itself."""


@dataclass(frozen=True, slots=True)
class UnicodeDump:
    """Rust's answers for every character; characters absent from `facts` are trivial."""

    version: str
    facts: dict[str, CharFacts]

    def of(self, char: str) -> CharFacts:
        return self.facts.get(char, _TRIVIAL)

    def lowercase(self, char: str) -> str:
        lowered = self.of(char).to_lowercase
        return char if lowered is None else lowered


_TRIVIAL = CharFacts()


def unicode_dump(binary: Path) -> UnicodeDump:
    """Rust's `is_uppercase`, `is_lowercase`, `is_whitespace` and `to_lowercase` for all chars."""
    result = subprocess.run(
        [str(binary), "--unicode-dump"], capture_output=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"reference harness failed:\n{result.stderr.decode()}")
    header, *rows = result.stdout.decode().rstrip("\n").split("\n")
    label, version = header.split()
    if label != "unicode":
        raise RuntimeError(f"unexpected --unicode-dump header {header!r}")
    facts: dict[str, CharFacts] = {}
    for row in rows:
        code, flags, lower = row.split(" ")
        char = chr(int(code, 16))
        lowered = "".join(chr(int(part, 16)) for part in lower.split(","))
        facts[char] = CharFacts(
            is_uppercase="U" in flags,
            is_lowercase="L" in flags,
            is_whitespace="W" in flags,
            to_lowercase=None if lowered == char else lowered,
        )
    return UnicodeDump(version=version, facts=facts)


def all_chars() -> Iterable[str]:
    """Every Unicode scalar value (the code points a Rust `char` can hold)."""
    for code in range(0x110000):
        if not 0xD800 <= code <= 0xDFFF:
            yield chr(code)
