"""Suite-wide settings."""

from __future__ import annotations

import os

from hypothesis import settings

# CI runs the same examples every time, so that a red run is reproducible and a green one
# is not luck; locally each run explores new examples (and keeps failures in .hypothesis/).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
