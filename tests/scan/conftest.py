"""A generated corpus of every layout, shared by the scan tests (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from refusals.scan.corpus import Truth, generate


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth]:
    root = tmp_path_factory.mktemp("corpus")
    return root, generate(root, records=400, seed=7)
