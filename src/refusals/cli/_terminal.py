"""Showing untrusted provider text on a terminal: the public sanitiser, re-exported here
for the command modules that imported it from this place first."""

from __future__ import annotations

from refusals.sanitize import sanitize

__all__ = ["sanitize"]
