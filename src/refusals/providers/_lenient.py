"""The one lenient pass: a decoded value (a dict from JSON, an SDK object's dump) as the
Structs of a wire format's schema, with whatever the schema forbids made harmless.

A wire format's schema is its only reader. Bytes go through msgspec's strict decode; what
that rejects (a wrong type anywhere, a number out of range, text that is not UTF-8) and
values that were decoded already come here, and leave as the same Structs, so the same
mapping gives the verdict. The rules are those of a careful hand-written reader:

- a value of the wrong type becomes None where the field allows None, else the field's
  default (so `"model": 5` is a model that is present but not given, as `"model": null`);
- in a list of objects, an element that is not one reads as an empty object (every field
  at its default: a block of no type, a candidate at index 0), as `obj(item)` reads it;
  in a list of anything else, an element of the wrong type is dropped, and so is one
  that is not an object where the Struct says `drop_non_objects` (a list whose reader
  skips such elements);
- a `Raw` field keeps the decoded value as it is (`Given`), read by `raw_value`;
- keys the schema does not declare are never looked at.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import orjson
from msgspec import inspect as mi

__all__ = ["Given", "filled", "is_null", "is_object", "lenient", "lenient_list", "raw_value"]

T = TypeVar("T", bound=msgspec.Struct)


class Given:
    """A `Raw` field's value as it was already decoded (truthy: the key was present)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return True


_MISSING = object()
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

# A field: its wire name, attribute name, type and whether a wrong value reads as None.
_Plan = tuple[tuple[str, str, mi.Type, bool], ...]
_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        plan = tuple(
            (field.encode_name, field.name, field.type, _nullable(field.type))
            for field in info.fields
        )
        _PLANS[cls] = plan
    return plan


def _nullable(kind: mi.Type) -> bool:
    if isinstance(kind, mi.NoneType):
        return True
    return isinstance(kind, mi.UnionType) and any(isinstance(t, mi.NoneType) for t in kind.types)


def _struct(cls: type[Any], value: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for wire, name, kind, nullable in _plan(cls):
        given = value.get(wire, _MISSING)
        if given is _MISSING:
            continue
        converted = _convert(given, kind)
        if converted is not _MISSING:
            kwargs[name] = converted
        elif nullable:
            kwargs[name] = None
    return cls(**kwargs)


def _convert(value: Any, kind: mi.Type) -> Any:
    """`value` as `kind` allows it, or `_MISSING` when it does not fit."""
    if isinstance(kind, mi.UnionType):
        for member in kind.types:
            converted = _convert(value, member)
            if converted is not _MISSING:
                return converted
        return _MISSING
    if isinstance(kind, mi.StrType):
        return value if isinstance(value, str) else _MISSING
    if isinstance(kind, mi.NoneType):
        return None if value is None else _MISSING
    if isinstance(kind, mi.IntType):
        if type(value) is not int:
            return _MISSING
        # The 64-bit limits are the strict decoder's, not the wire's: a decoded value
        # past them is still a number (and reads as a hand-written reader reads it).
        if kind.ge is not None and kind.ge > _INT_MIN and value < kind.ge:
            return _MISSING
        if kind.le is not None and kind.le < _INT_MAX and value > kind.le:
            return _MISSING
        return value
    if isinstance(kind, mi.BoolType):
        return value if type(value) is bool else _MISSING
    if isinstance(kind, mi.FloatType):
        return float(value) if type(value) in (int, float) else _MISSING
    if isinstance(kind, mi.StructType):
        return _struct(kind.cls, value) if isinstance(value, dict) else _MISSING
    if isinstance(kind, mi.ListType):
        if not isinstance(value, list):
            return _MISSING
        item_type = kind.item_type
        if isinstance(item_type, mi.StructType):
            cls = item_type.cls
            if getattr(cls, "drop_non_objects", False):
                return [_struct(cls, item) for item in value if isinstance(item, dict)]
            return [_struct(cls, item) if isinstance(item, dict) else cls() for item in value]
        items = [_convert(item, item_type) for item in value]
        return [item for item in items if item is not _MISSING]
    if isinstance(kind, mi.RawType):
        return Given(value)
    if isinstance(kind, mi.DictType):
        return value if isinstance(value, dict) else _MISSING
    if isinstance(kind, mi.AnyType):
        return value
    raise TypeError(f"the lenient pass has no rule for {kind!r}")


def lenient(value: dict[str, Any], cls: type[T]) -> T:
    """`value` read as the Struct `cls` by the rules above."""
    result: T = _struct(cls, value)
    return result


def lenient_list(value: Any, cls: type[T]) -> list[T]:
    """`value` read as a list of the Struct `cls` (an empty list when it is not a list)."""
    if not isinstance(value, list):
        return []
    if getattr(cls, "drop_non_objects", False):
        return [_struct(cls, item) for item in value if isinstance(item, dict)]
    return [_struct(cls, item) if isinstance(item, dict) else cls() for item in value]


_WHITESPACE = b" \t\r\n"
_BRACE = ord("{")


def filled(value: msgspec.Raw | Given, cls: type[T], decode: Any) -> T | None:
    """A `Raw` field read as the Struct `cls` when it holds a non-empty object; None for
    an empty object or any other value (as a reader that treats `{}` as absent reads it,
    which a Struct cannot tell from an object of keys it does not declare). `decode` is
    the strict decoder of `cls`; a value it rejects raises, as a strict read does."""
    if not value:
        return None
    if isinstance(value, Given):
        given = value.value
        return _struct(cls, given) if isinstance(given, dict) and given else None
    # A Raw value holds no whitespace around it: its first byte says what it is.
    if memoryview(value)[0] != _BRACE:
        return None
    if len(value) < 16 and bytes(value).translate(None, _WHITESPACE) == b"{}":
        return None
    result: T = decode(value)
    return result


def is_object(value: msgspec.Raw | Given) -> bool:
    """Whether a `Raw` field holds a JSON object (an empty one too)."""
    if isinstance(value, Given):
        return isinstance(value.value, dict)
    return bool(value) and memoryview(value)[0] == _BRACE


def is_null(value: msgspec.Raw | Given) -> bool:
    """Whether a `Raw` field holds JSON null."""
    if isinstance(value, Given):
        return value.value is None
    return bytes(value) == b"null"


def raw_value(value: msgspec.Raw | Given) -> Any:
    """The JSON value of a `Raw` field, decoded as orjson reads it; None when absent."""
    if isinstance(value, Given):
        return value.value
    return orjson.loads(memoryview(value)) if value else None
