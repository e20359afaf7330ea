"""`refusals.toml`: the defaults `exec` and `chat` take when a flag does not say.

Looked up in the workspace (`refusals.toml`), then in the user's config directory
(`$XDG_CONFIG_HOME/refusals/config.toml`, by default `~/.config/refusals/config.toml`);
`REFUSALS_CONFIG` names a file to use instead of both. A key the workspace file sets
wins over the user's; an environment variable (`REFUSALS_MODEL`) over both; a flag over
everything. A bad file or value is a usage error naming the file and the key.

    model = "anthropic:claude-opus-4-8"
    fallback_models = ["openai:gpt-5.2"]
    fallback_scope = "turn"          # or "session"
    timeout = 600                    # seconds per provider call

    [policy]                         # on a refusal or filter, by category, then kind
    cyber = "fallback:openai:gpt-5.2"
    self_harm = "stop"
    content_filter = "ask"           # chat asks first; exec stops
    default = "fallback"             # the fallback_models, in order

    [prices."anthropic:claude-opus-4-8"]   # US dollars per million tokens
    input = 15.0
    output = 75.0
    cache_read = 1.5                 # optional (default: the input price)
    cache_write = 18.75              # optional (default: the input price)
"""

from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from refusals.cli._models import UsageError
from refusals.loop.events import Price
from refusals.transport.fallback import Action, BlockPolicy, Rule

WORKSPACE_FILE = "refusals.toml"
KEYS = ("model", "fallback_models", "fallback_scope", "timeout", "policy", "prices")
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
ACTIONS: dict[str, Action] = {"stop": "stop", "fallback": "fallback", "ask": "ask"}


@dataclass(slots=True)
class Settings:
    """What a config file (or several) set; None where nothing did."""

    model: str | None = None
    fallback_models: tuple[str, ...] | None = None
    fallback_scope: Literal["turn", "session"] | None = None
    timeout: float | None = None
    policy: BlockPolicy | None = None
    prices: dict[str, Price] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    """The files read, the one that wins first."""


def user_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "refusals" / "config.toml"


def config_files(workspace: Path) -> list[Path]:
    """The files to read, the one that wins first."""
    explicit = os.environ.get("REFUSALS_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise UsageError(f"REFUSALS_CONFIG names {path}, which is not a file")
        return [path]
    return [p for p in (workspace / WORKSPACE_FILE, user_config_file()) if p.is_file()]


def load_settings(workspace: Path) -> Settings:
    """The settings of the config files that apply to `workspace`, merged key by key,
    with `REFUSALS_MODEL` over them."""
    settings = Settings()
    for path in reversed(config_files(workspace)):
        _apply(settings, path, _read(path))
        settings.sources.insert(0, path)
    model = os.environ.get("REFUSALS_MODEL")
    if model:
        settings.model = model
    return settings


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None


def _apply(settings: Settings, path: Path, data: dict[str, Any]) -> None:
    for key, value in data.items():
        if key not in KEYS:
            raise UsageError(f"{path}: unknown key {key!r}{_did_you_mean(key, KEYS)}")
        where = f"{path}: {key}"
        if key == "model":
            settings.model = _model(where, value)
        elif key == "fallback_models":
            if not isinstance(value, list):
                raise UsageError(f"{where} must be a list of PROVIDER:MODEL strings")
            settings.fallback_models = tuple(_model(where, v) for v in value)
        elif key == "fallback_scope":
            if value not in ("turn", "session"):
                raise UsageError(f'{where} must be "turn" or "session", not {value!r}')
            settings.fallback_scope = value
        elif key == "timeout":
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise UsageError(f"{where} must be a positive number of seconds, not {value!r}")
            settings.timeout = float(value)
        elif key == "prices":
            settings.prices.update(_prices(path, value))
        else:
            settings.policy = _policy(path, value, settings.policy)


def _model(where: str, value: Any) -> str:
    if not isinstance(value, str) or ":" not in value or not value.partition(":")[2]:
        raise UsageError(f"{where} must be a PROVIDER:MODEL string, not {value!r}")
    return value


def _policy(path: Path, value: Any, earlier: BlockPolicy | None) -> BlockPolicy:
    if not isinstance(value, dict):
        raise UsageError(f"{path}: policy must be a table ([policy]) of category = action")
    rules = dict(earlier.rules) if earlier is not None else {}
    for name, action in value.items():
        where = f"{path}: policy.{name}"
        if not isinstance(action, str):
            raise UsageError(f"{where} must be a string: {_ACTION_FORMS}")
        verb, _, model = action.strip().partition(":")
        if verb not in ACTIONS or (model and verb == "stop"):
            raise UsageError(f"{where}: {action!r} is not {_ACTION_FORMS}")
        if model and not model.partition(":")[2]:
            raise UsageError(f"{where}: {action!r} names no model; write {verb}:PROVIDER:MODEL")
        rules[name.strip().lower()] = Rule(ACTIONS[verb], model or None)
    return BlockPolicy(rules)


def _prices(path: Path, value: Any) -> dict[str, Price]:
    if not isinstance(value, dict):
        raise UsageError(f'{path}: prices must be a table of [prices."PROVIDER:MODEL"] tables')
    prices: dict[str, Price] = {}
    for model, entry in value.items():
        where = f"{path}: prices.{model}"
        _model(where, model)
        if not isinstance(entry, dict):
            raise UsageError(f"{where} must be a table with input and output")
        for name in entry:
            if name not in PRICE_KEYS:
                raise UsageError(f"{where}: unknown key {name!r}{_did_you_mean(name, PRICE_KEYS)}")
        numbers: dict[str, float | None] = {}
        for name in PRICE_KEYS:
            number = entry.get(name)
            if number is None and name in ("input", "output"):
                raise UsageError(f"{where}: {name} is missing (US dollars per million tokens)")
            if number is not None and (
                isinstance(number, bool) or not isinstance(number, int | float) or number < 0
            ):
                raise UsageError(f"{where}.{name} must be a number of dollars, not {number!r}")
            numbers[name] = float(number) if number is not None else None
        prices[model] = Price(
            numbers["input"] or 0.0,
            numbers["output"] or 0.0,
            numbers["cache_read"],
            numbers["cache_write"],
        )
    return prices


_ACTION_FORMS = '"stop", "fallback", "fallback:PROVIDER:MODEL", "ask" or "ask:PROVIDER:MODEL"'


def _did_you_mean(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    known = ", ".join(choices)
    return f" (did you mean {close[0]!r}?; known keys: {known})" if close else f" (known: {known})"
