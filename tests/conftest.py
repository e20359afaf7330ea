"""Suite-wide settings."""

from __future__ import annotations

import os

from hypothesis import settings

# CI runs the same examples every time, so that a red run is reproducible and a green one
# is not luck; locally each run explores new examples (and keeps failures in .hypothesis/).
settings.register_profile("ci", derandomize=True, print_blob=True)
# A quick local run (HYPOTHESIS_PROFILE=quick): a tenth of the examples, the same tests.
settings.register_profile("quick", max_examples=10)
if os.environ.get("CI"):
    settings.load_profile("ci")
elif os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


import pytest  # noqa: E402 - after the hypothesis profile, which must load first


@pytest.fixture(autouse=True)
def _no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads the config of the user running the suite (`~/.config/refusals`,
    REFUSALS_MODEL): child processes inherit these too."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    monkeypatch.delenv("REFUSALS_MODEL", raising=False)
    monkeypatch.delenv("REFUSALS_CONFIG", raising=False)
