"""Tools a model may call: a registry of Python functions with JSON-schema arguments.

This is the library API for users' own tools:

    tools = ToolRegistry()

    @tools.tool
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

The schema is read from the signature (or given), arguments are checked against its
required properties and basic types before the function runs, and every result is
bounded in size, with a note when it was cut. A tool's failure is a result the model
sees (`is_error`), never an exception out of the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

import orjson

from refusals.model import ToolCall
from refusals.request import JsonObject, ToolSpec

Permission = Literal["read", "write", "command", "agent"]
"""What a tool may do: read the workspace, write to it, run commands, or start agents."""

MAX_OUTPUT_CHARS = 20_000
"""Upper bound on the text a tool result hands back to the model."""

ToolFunction = Callable[..., Any]
F = TypeVar("F", bound=ToolFunction)


class ToolError(Exception):
    """Raised by a tool to report a failure to the model in one clear sentence."""


@dataclass(slots=True)
class ToolResult:
    """What a call gave back: text for the model, and structured data for surfaces."""

    output: str
    is_error: bool = False
    data: JsonObject | None = None


@dataclass(slots=True)
class Tool:
    name: str
    function: ToolFunction
    description: str = ""
    parameters: JsonObject = field(default_factory=lambda: {"type": "object", "properties": {}})
    permission: Permission = "read"

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


def truncate_output(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """`text`, or its first `limit` characters followed by a note saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output truncated: the first {limit} of {len(text)} characters shown]"


_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def _schema_type(annotation: Any) -> JsonObject:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _schema_type(members[0]) if len(members) == 1 else {}
    if origin is Literal:
        return {"enum": list(typing.get_args(annotation))}
    if origin in (list, tuple, set, frozenset):
        args = typing.get_args(annotation)
        item = _schema_type(args[0]) if args else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    kind = _JSON_TYPES.get(annotation)
    return {"type": kind} if kind else {}


def schema_from_signature(function: ToolFunction) -> JsonObject:
    """The JSON schema of `function`'s keyword arguments, from its type hints."""
    hints = typing.get_type_hints(function)
    properties: JsonObject = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        properties[name] = _schema_type(hints.get(name, Any))
        if parameter.default is parameter.empty:
            required.append(name)
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def check_arguments(arguments: JsonObject, schema: JsonObject) -> str | None:
    """Why `arguments` do not fit `schema` (required properties, basic types), or None."""
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in arguments:
            return f"missing required argument {name!r}"
    for name, value in arguments.items():
        prop = properties.get(name)
        if prop is None:
            if schema.get("additionalProperties") is False:
                return f"unknown argument {name!r}"
            continue
        expected = prop.get("type") if isinstance(prop, dict) else None
        allowed = _PYTHON_TYPES.get(expected) if isinstance(expected, str) else None
        if allowed is None:
            continue
        # JSON has no separate bool type in Python terms: True is an int, but not here.
        wrong_bool = isinstance(value, bool) and expected in ("integer", "number")
        if wrong_bool or not isinstance(value, allowed):
            return f"argument {name!r} must be of type {expected}"
    return None


def parse_arguments(call: ToolCall) -> JsonObject | str:
    """The decoded arguments of `call`, or why they are malformed."""
    text = call.arguments.strip() or "{}"
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return "the arguments are not valid JSON"
    if not isinstance(value, dict):
        return "the arguments must be a JSON object"
    return value


class ToolRegistry:
    """Tools by name; `specs()` is what a request offers, `call()` runs one call."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    @overload
    def tool(self, function: F, /) -> F: ...

    @overload
    def tool(
        self,
        function: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: JsonObject | None = None,
        permission: Permission = "read",
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        function: F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: JsonObject | None = None,
        permission: Permission = "read",
    ) -> F | Callable[[F], F]:
        """Register a function as a tool: `@tools.tool`, or `@tools.tool(name=...)`.

        Returns the function itself (or, called with options only, the decorator).
        """

        def register(fn: F) -> F:
            doc = inspect.getdoc(fn) or ""
            self.add(
                Tool(
                    name or fn.__name__,
                    fn,
                    description if description is not None else doc.split("\n\n")[0],
                    parameters if parameters is not None else schema_from_signature(fn),
                    permission,
                )
            )
            return fn

        return register(function) if function is not None else register

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """The tools named in `names` that this registry has (unknown names are ignored)."""
        wanted = set(names)
        return ToolRegistry(tool for tool in self._tools.values() if tool.name in wanted)

    def without(self, *names: str) -> ToolRegistry:
        return ToolRegistry(tool for tool in self._tools.values() if tool.name not in names)

    def check(self, call: ToolCall) -> str | None:
        """Why `call` cannot run as written (unknown tool, malformed arguments), or None."""
        tool = self._tools.get(call.name)
        if tool is None:
            offered = ", ".join(self._tools) or "none"
            return f"there is no tool named {call.name!r} (tools offered: {offered})"
        arguments = parse_arguments(call)
        if isinstance(arguments, str):
            return arguments
        return check_arguments(arguments, tool.parameters)

    async def call(self, call: ToolCall, *, max_output_chars: int = MAX_OUTPUT_CHARS) -> ToolResult:
        """Run `call`; whatever happens, a bounded result for the model."""
        problem = self.check(call)
        if problem is not None:
            return ToolResult(f"error: {problem}", is_error=True)
        tool = self._tools[call.name]
        arguments = parse_arguments(call)
        assert isinstance(arguments, dict)
        try:
            if inspect.iscoroutinefunction(tool.function):
                value = await tool.function(**arguments)
            else:
                # Off the event loop: a tool that blocks (a slow disk, a user's function)
                # never stops Ctrl-C, timeouts or the stream of another subagent.
                value = await asyncio.to_thread(tool.function, **arguments)
                if inspect.isawaitable(value):
                    value = await value
        except ToolError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        except Exception as exc:  # a user's tool failing is reported to the model
            return ToolResult(f"error: {type(exc).__name__}: {exc}", is_error=True)
        result = value if isinstance(value, ToolResult) else ToolResult(_as_text(value))
        result.output = truncate_output(result.output, max_output_chars)
        return result


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)
