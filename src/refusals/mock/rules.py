"""Users' own scenario rules, from a TOML or JSON file (`--scenarios FILE`).

```toml
[[rules]]
model = "gpt-4o"                 # optional: the request's model, exactly
prompt_contains = "weather"      # optional: a substring of the last user message
prompt_regex = "(?i)forecast"    # optional: a regular expression searched in it
tool = "get_weather"             # optional: a tool the request offers
wire = "anthropic"               # optional: the wire format it came in
after_tool_result = true         # optional: the request ends with a tool result (false:
                                 # it does not)
scenario = "tool-then-answer"    # the answer: a scenario name ...
# status = 200, body = {...}     # ... or a literal body
# events = [{...}, {...}]        # ... or literal stream events, in the wire's framing
```

Rules are tried in file order; the first whose every condition holds answers. They come
before the built-in `mock-NAME` model names (a rule may answer `model = "mock-refusal"`
differently); only the `x-mock-scenario` header and Anthropic's documented refusal test
string come first. A file that cannot be used raises `ScenarioFileError`, whose message
names the file, the rule and the problem in one line.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refusals.mock.scenarios import Choice, Conversation, LiteralAnswer, parse_name

_CONDITIONS = ("model", "prompt_contains", "prompt_regex", "tool", "wire")
_ANSWERS = ("scenario", "body", "events")
_FLAGS = ("after_tool_result",)
_KEYS = frozenset((*_CONDITIONS, *_FLAGS, *_ANSWERS, "status"))


class ScenarioFileError(ValueError):
    """A scenario file that cannot be used; the message is one line naming the problem."""


@dataclass(slots=True)
class Rule:
    answer: Choice | LiteralAnswer
    model: str | None = None
    prompt_contains: str | None = None
    prompt_regex: re.Pattern[str] | None = None
    tool: str | None = None
    wire: str | None = None
    after_tool_result: bool | None = None

    def matches(self, conv: Conversation) -> bool:
        prompt = conv.last_user_text
        return (
            (self.after_tool_result is None or conv.last_is_tool_result == self.after_tool_result)
            and (self.model is None or conv.model == self.model)
            and (self.wire is None or conv.wire == self.wire)
            and (self.prompt_contains is None or self.prompt_contains in prompt)
            and (self.prompt_regex is None or self.prompt_regex.search(prompt) is not None)
            and (self.tool is None or any(t.name == self.tool for t in conv.tools))
        )


@dataclass(slots=True)
class Rules:
    rules: list[Rule] = field(default_factory=list)

    def match(self, conv: Conversation) -> Choice | LiteralAnswer | None:
        for rule in self.rules:
            if rule.matches(conv):
                return rule.answer
        return None


def load_rules(path: Path) -> Rules:
    """The rules of a `.toml` or `.json` file; `ScenarioFileError` when unusable."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioFileError(f"cannot read scenario file {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ScenarioFileError(f"scenario file {path} is not valid {kind}: {detail}") from None
    return parse_rules(data, str(path))


def parse_rules(data: Any, source: str = "scenario file") -> Rules:
    """Rules from decoded data (`{"rules": [...]}`); `ScenarioFileError` when unusable."""
    unknown = sorted(set(data) - {"rules"}) if isinstance(data, dict) else []
    if unknown:
        raise ScenarioFileError(f"{source}: unknown top-level key {unknown[0]!r}; expected 'rules'")
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ScenarioFileError(
            f"{source}: expected a top-level 'rules' list ([[rules]] tables in TOML)"
        )
    return Rules([_rule(item, f"{source}: rule {i + 1}") for i, item in enumerate(data["rules"])])


def _rule(item: Any, where: str) -> Rule:
    if not isinstance(item, dict):
        raise ScenarioFileError(f"{where}: expected a table of conditions and an answer")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        keys = ", ".join(sorted(_KEYS))
        raise ScenarioFileError(f"{where}: unknown key {unknown[0]!r}; expected one of {keys}")
    answers = [key for key in _ANSWERS if key in item]
    if len(answers) != 1:
        raise ScenarioFileError(
            f"{where}: give exactly one answer: 'scenario', 'body' or 'events'"
            + (f" (got {', '.join(answers)})" if answers else "")
        )
    for key in _CONDITIONS:
        if key in item and not isinstance(item[key], str):
            raise ScenarioFileError(f"{where}: {key!r} must be a string")
    for key in _FLAGS:
        if key in item and not isinstance(item[key], bool):
            raise ScenarioFileError(f"{where}: {key!r} must be true or false")
    regex = None
    if "prompt_regex" in item:
        try:
            regex = re.compile(item["prompt_regex"])
        except re.error as exc:
            raise ScenarioFileError(f"{where}: prompt_regex is not a valid regex: {exc}") from None
    return Rule(
        answer=_answer(item, answers[0], where),
        model=item.get("model"),
        prompt_contains=item.get("prompt_contains"),
        prompt_regex=regex,
        tool=item.get("tool"),
        wire=item.get("wire"),
        after_tool_result=item.get("after_tool_result"),
    )


def _answer(item: dict[str, Any], key: str, where: str) -> Choice | LiteralAnswer:
    status = item.get("status", 200)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ScenarioFileError(f"{where}: status must be an HTTP status from 100 to 599")
    if key == "scenario":
        name = item["scenario"]
        choice = parse_name(name) if isinstance(name, str) else None
        if choice is None:
            raise ScenarioFileError(
                f"{where}: unknown scenario {name!r}; `refusals mock-server --list` lists them"
            )
        return choice
    if key == "events":
        events = item["events"]
        if not isinstance(events, list) or not events:
            raise ScenarioFileError(f"{where}: 'events' must be a non-empty list")
        return LiteralAnswer(status=status, events=events)
    return LiteralAnswer(status=status, body=item["body"])
