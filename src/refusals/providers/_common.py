"""Pieces every provider module shares: the payload error, field readers, error defaults,
error-message hygiene (secret redaction, bounding, error pages), JSON text of decoded
values, and the events of an error inside a stream."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
import orjson

from refusals.events import StreamError, StreamEvent, Verdict
from refusals.model import (
    ErrorKind,
    FinishReason,
    LLMResponse,
    ProviderError,
    StopDetails,
    Usage,
)
from refusals.refusal import truncate_within

JsonObject = dict[str, Any]


# --- schema types ---------------------------------------------------------------------
#
# A wire format's Structs (its schema) declare only the keys its mapping reads: a key not
# declared is skipped unread. Bytes are decoded strictly; what that rejects (a wrong type,
# a number out of range, bytes that are not JSON) is decoded by orjson and read by the
# lenient pass (`providers/_lenient.py`) into the same Structs. Numbers keep orjson's
# reading: orjson reads an integer beyond 64 bits as a float, so `Int` rejects those
# (msgspec bounds an int to 64 bits) and the lenient pass reads what orjson gave.

Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
"""An integer orjson reads as an int too (it reads ones beyond 64 bits as floats)."""

Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
"""A token count as `integer` reads it: `Count | None = 0` and `value or 0` give the same
count; a negative one is rejected (the dict path reads it as 0)."""

Absent = Annotated[int, msgspec.Meta(ge=1, le=0)]
"""A key that sends the body elsewhere (another format's, an error's): no JSON value
decodes as this type, so the decode itself declines a body that has the key, where a
check of each field afterwards costs an attribute test per key. Declare it `= 0`."""

FAST_FAILED = (msgspec.DecodeError, orjson.JSONDecodeError, RecursionError, UnicodeEncodeError)
"""What a typed decode raises on a body it does not take: ValidationError included; msgspec
raises RecursionError on deep nesting, even in a value it skips, and UnicodeEncodeError on
text that holds a lone surrogate (it encodes text to UTF-8 first)."""

Plain = tuple[str, str | None, FinishReason]
"""The verdict on a plain answer: (provider, model, finish reason)."""

NOT_PLAIN: Plain = ("", None, FinishReason.ERROR)
"""`parse_plain`'s answer for a body of its format that is not a plain answer (refused,
filtered, an error, or anything the verdict alone cannot tell): read it whole."""

Keyed = tuple[bytes, int, int]
"""`outcome_key`'s answer on a decoded body: what the response read from it depends on
apart from its request id and usage, as bytes, and the usage's input and output tokens.
Bodies of equal bytes give responses equal in all but those (a usage's other counts,
such as Anthropic's tokens per pass, included), so a scan counting many refused bodies
reads one of each whole."""

_encode_key = msgspec.json.encode


def keyed(body: msgspec.Struct, counts: Usage, /, **left_out: Any) -> Keyed:
    """`Keyed` for `body` with the fields `left_out` replaced (the request id, the usage)
    and the tokens of `counts`, its usage read. The bytes are the Struct encoded field by
    field in declared order, so two Structs of one type give equal bytes only when their
    fields are equal."""
    key = _encode_key(msgspec.structs.replace(body, **left_out))
    return key, counts.input_tokens, counts.output_tokens


PLAIN_FINISHES = frozenset({FinishReason.STOP, FinishReason.LENGTH, FinishReason.TOOL_CALLS})
"""The finish reasons of a plain answer."""


def plain_of(response: LLMResponse | None) -> Plain | None:
    """`parse_plain` from `parse_fast`'s response, for a format read too rarely for a
    verdict of its own: plain without an error, usage iterations or details."""
    if response is None:
        return None
    if (
        response.finish_reason not in PLAIN_FINISHES
        or response.error is not None
        or response.reasoning_details
        or (response.usage is not None and response.usage.iterations)
    ):
        return NOT_PLAIN
    return response.provider or "", response.model, response.finish_reason


Raw = msgspec.Raw
NO_RAW = msgspec.Raw(b"")
"""Default of a Raw field: `not value` when the key was absent."""


def count(value: int | None) -> int:
    """`integer` of a value decoded as `Int | None`."""
    return value if value is not None and value > 0 else 0


class NormalizeError(ValueError):
    """A payload that is not a response or error body of any known wire format.

    The message names what was expected; it is safe to show to a user.
    """


def obj(value: Any) -> JsonObject:
    """`value` when it is a JSON object, else an empty one (absent and null read alike)."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def string(value: Any) -> str | None:
    """`value` when it is a string, else None (numbers, null and lists are not strings)."""
    return value if isinstance(value, str) else None


def require_object(payload: Any, what: str) -> JsonObject:
    if not isinstance(payload, dict):
        raise NormalizeError(f"expected {what} as a JSON object, got {type_name(payload)}")
    return payload


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def status_error_kind(status: int | None) -> ErrorKind:
    """What an HTTP status means when the body says nothing more specific."""
    if status is None:
        return ErrorKind.INVALID_REQUEST
    if status in (408, 409, 425, 429) or status >= 500:
        return ErrorKind.TRANSIENT
    if status in (401, 402, 403, 407):
        return ErrorKind.AUTH
    return ErrorKind.INVALID_REQUEST


def error_response(
    error: ProviderError,
    *,
    provider: str,
    api: str,
    stop: StopDetails | None = None,
    model: str | None = None,
    request_id: str | None = None,
) -> LLMResponse:
    """The `LLMResponse` for an HTTP error body: a policy block is a content-filter stop."""
    finish = FinishReason.CONTENT_FILTER if error.kind is ErrorKind.POLICY else FinishReason.ERROR
    if finish is FinishReason.CONTENT_FILTER and stop is None:
        stop = StopDetails(explanation=error.message)
    return LLMResponse(
        finish_reason=finish,
        raw_finish_reason=error.code if error.code is not None else _status_text(error.status),
        reasoning_details=[stop.to_detail()] if stop is not None else [],
        model=model,
        request_id=request_id,
        provider=provider,
        api=api,
        error=error,
    )


def _status_text(status: int | None) -> str | None:
    return None if status is None else f"http_{status}"


# --- finish reasons -------------------------------------------------------------------

INTERRUPTED = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER, FinishReason.ERROR})
"""Finish reasons after which whatever content came is marked cut off."""

FINAL = frozenset({FinishReason.REFUSAL, FinishReason.CONTENT_FILTER})
"""Stream verdicts that no later event overturns (the accumulator keeps them too)."""


def interrupted(finish: FinishReason) -> bool:
    """Whether content that came before this finish reason was cut off."""
    return finish in INTERRUPTED


def typed_detail(kind: str, name: str, value: str | None) -> str:
    """A reasoning detail `{"type": kind, name: value}` as JSON text (no `name` when None)."""
    fields: JsonObject = {"type": kind}
    if value is not None:
        fields[name] = value
    return orjson.dumps(fields).decode()


def key_names(body: JsonObject) -> str:
    """The first keys of a body, for an error message that says what came instead."""
    names = list(body)[:8]
    return ", ".join(names) + (", ..." if len(body) > 8 else "") if names else "none"


# --- JSON text of decoded values --------------------------------------------------------


def json_text(value: Any, default: str = "") -> str:
    """Compact JSON text of an already decoded value, never raising; `default` when even the
    standard library cannot write it (orjson cannot write integers beyond 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        try:
            return json.dumps(value, default=str, separators=(",", ":"))
        except (ValueError, TypeError, RecursionError):
            return default


def arguments_text(value: Any, absent: str = "{}") -> str:
    """Tool-call arguments as text: a string as given (providers that stream arguments send
    JSON text), `absent` for none (or for a value no JSON can hold), anything else as JSON."""
    if value is None:
        return absent
    if isinstance(value, str):
        return value
    return json_text(value, absent)


# --- error messages ---------------------------------------------------------------------

MAX_MESSAGE_CHARS = 1000
"""Default upper bound, in code points, on an error message copied from a provider body."""

REDACTED = "[redacted]"
"""What a secret in an error message is replaced with."""

# Words that follow "API key:" or "Bearer" in the prose of error messages ("send it in
# an Authorization: Bearer header"), which are not the secret and are kept.
_NOT_PROSE = (
    r"(?!(?i:header|headers|token|tokens|auth|authentication|scheme|bearer|basic|required|missing|send"
    r"|provided|invalid|must|your|the|an?|in|is|was|with|using|or|and|for)(?![\w-]))"
)

# One alternative a kind of secret: (what names it, kept when names are kept; the secret).
# Alternatives are tried in this order where several start at the same place: the ones
# that read further (query parameters before headers, `sk-...` with dots before without).
# Secrets are matched where no letter or digit comes right before them (an underscore
# may): a key glued to a word (`api_key_sk-...`, `token=AKIA...`) is still a key.
_NAMED_SECRETS = (
    # OpenAI and xAI echo the wrong key: "Incorrect API key provided: sk-...." (a final "."
    # is prose).
    (r"(?i:incorrect api key provided:\s*)", r"\S+?(?=\.?(?:\s|$))"),
    # xAI: "Team: <id>, API key ID: <id>".
    (r"(?i:\b(?:api key id|team):\s*)", r"[^,\s]+"),
    # Query parameters: "?key=...", "&access_token=...".
    (r"(?i:\b(?:api_?key|key|token|access_token)=)", r"[^\s&\"',)\]}]+"),
    # A password in a URL: "https://user:PASSWORD@host" (the user name is kept).
    (r"(?i:\b[a-z][a-z0-9+.-]*://[^\s/@:]*:)", r"[^\s/@]+(?=@)"),
    # API-key headers; the value stops at a closing bracket of the prose around it.
    (
        r"(?i:\bx-(?:goog-)?api-key\b[\"']?\s*[:=]?\s*[\"']?"
        r"(?:(?:bearer|basic|AWS4-HMAC-SHA256)\s+)?)",
        r"[^\s\"',)\]}]+",
    ),
    # AWS credentials by name, in headers, config files and SDK dumps.
    (
        r"(?i:(?:aws_secret_access_key|aws_session_token|secretaccesskey|sessiontoken"
        r"|x-amz-security-token)[\"']?\s*[:=]?\s*[\"']?)",
        r"[A-Za-z0-9/+=_-]{8,}",
    ),
    # Other credential headers, with the authorization scheme.
    (
        r"(?i:(?:api[-_ ]?key|authorization|ocp-apim-subscription-key)[\"']?\s*[:=]\s*[\"']?"
        r"(?:(?:bearer|basic|AWS4-HMAC-SHA256)\s+)?)",
        _NOT_PROSE + r"[^\s\"',;}]+",
    ),
    (r"(?i:\bbearer\s+)", _NOT_PROSE + r"[^\s\"',)\]}]+"),
    # An unprefixed key (Azure's 32 hex digits, Mistral's 32 and Cohere's 40 characters)
    # after a word that names a key: "invalid api key abc123...", "token 'abc123...'". At
    # least 20 characters with a digit among them, so prose after the word is kept.
    (
        r"(?i:\b(?:api[-_ ]?keys?|keys?|tokens?|secrets?|passwords?|subscription[-_ ]keys?"
        r"|credentials?)\b(?:\s+(?:is|was|of))?[\"'`]?\s*[:=]?\s*[\"'`]?)",
        r"(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}",
    ),
)
_PROSE_NAMES = frozenset({0, 1, len(_NAMED_SECRETS) - 1})
"""The alternatives named by prose, which is kept in every case."""
_EDGE = r"(?<![A-Za-z0-9])"
_BARE_SECRETS = (
    # Keys: OpenAI `sk-...`, `sk-proj-...`, Groq `gsk_...`, xAI `xai-...`, Stripe-style
    # `rk_`/`pk_`; Anthropic `sk-ant-...`; AWS access key ids; Google API keys.
    _EDGE + r"(?:sk|gsk|xai|rk|pk)[-_][A-Za-z0-9_*.-]{5,}[A-Za-z0-9_*-]",
    _EDGE + r"(?i:sk-[A-Za-z0-9_-]{6,})",
    _EDGE + r"(?:AKIA|ASIA|AROA|AIDA)[0-9A-Z]{16}(?![0-9A-Za-z])",
    _EDGE + r"AIza[0-9A-Za-z_-]{10,}",
    # `key_<hex>` keys (some gateways and self-hosted servers).
    _EDGE + r"key_[0-9A-Fa-f]{16,}(?![0-9A-Za-z])",
    # Google OAuth access tokens, JWTs (`eyJ` is `{"` in base64), AWS session tokens.
    _EDGE + r"ya29\.[0-9A-Za-z_.-]{10,}",
    _EDGE + r"eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+){0,2}",
    _EDGE + r"(?:IQoJb3JpZ2lu|FwoGZXIvYXdz)[A-Za-z0-9/+=]{8,}",
    # A key alone in quotes: 32 or 40 letters and digits with at least one digit.
    r"(?<=[\"'`])(?=[A-Za-z]*[0-9])[A-Za-z0-9]{32}(?:[A-Za-z0-9]{8})?(?=[\"'`])",
)
_SECRETS = re.compile(
    "|".join(
        [f"(?P<n{i}>{name}){secret}" for i, (name, secret) in enumerate(_NAMED_SECRETS)]
        + list(_BARE_SECRETS)
    )
)
"""Every alternative at once: what `redact` gives is what this pattern's `sub` gives."""
_KEPT_NAMES = frozenset(f"n{i}" for i in _PROSE_NAMES)


# Exact pre-filter, per alternative of `_SECRETS` (in its order): each one matches only
# where the text holds all the strings of one of its anchors (lower-cased), so `redact`
# runs just the alternatives whose anchor is there, in the same order, which finds the same
# matches; text with no anchor at all holds no secret and skips the regular expression,
# which costs about a microsecond per character for all of them. The quoted bare key is
# the one alternative with no literal: `_QUOTED_KEY` looks for it alone.
_ANCHORS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("incorrect api key provided:",),),
    (("api key id:",), ("team:",)),
    (("key=",), ("token=",)),
    (("://", "@"),),
    (("api-key",),),
    (("aws_secret_access_key",), ("aws_session_token",), ("secretaccesskey",),
     ("sessiontoken",), ("x-amz-security-token",)),
    (("api", "key", ":"), ("api", "key", "="), ("authorization", ":"), ("authorization", "=")),
    (("bearer",),),
    (("key",), ("token",), ("secret",), ("password",), ("credential",)),
    (("sk-",), ("sk_",), ("xai-",), ("xai_",), ("rk-",), ("rk_",), ("pk-",), ("pk_",)),
    (("sk-",),),
    (("akia",), ("asia",), ("aroa",), ("aida",)),
    (("aiza",),),
    (("key_",),),
    (("ya29.",),),
    (("eyj",),),
    (("iqojb3jpz2lu",), ("fwogzxivyxdz",)),
)  # fmt: skip
_ALTERNATIVES = (
    *(f"(?P<n{i}>{name}){secret}" for i, (name, secret) in enumerate(_NAMED_SECRETS)),
    *_BARE_SECRETS,
)
_QUOTED = len(_ALTERNATIVES) - 1
# The same anchors, a one-piece anchor as its string (plain loops: generators cost more).
_INDEXED_ANCHORS = tuple(
    (index, tuple(anchor[0] if len(anchor) == 1 else anchor for anchor in anchors))
    for index, anchors in enumerate(_ANCHORS)
)
_UNPREFIXED_KEY = len(_NAMED_SECRETS) - 1
"""The alternative whose secret is a run of at least 20 ASCII letters, digits, "_" or "-"
(an unprefixed key after a word that names one): text without such a run (`_KEY_RUN`)
cannot match it, and the words it looks for ("key", "token") are in most error messages."""
_KEY_RUN = re.compile(r"[A-Za-z0-9_-]{20}")
# The root pieces: each anchor holds one (the first that fits is its root, see `_rooted`),
# the shortest first (most of them are inside longer anchors).
_ANY_ANCHOR = (
    "key", "token", "team:", "://", "bearer", "authorization", "secret", "password",
    "credential", "sk-", "sk_", "xai", "rk-", "rk_", "pk-", "pk_", "akia", "asia", "aroa",
    "aida", "aiza", "ya29.", "eyj", "iqojb3jpz2lu", "fwogzxivyxdz",
)  # fmt: skip
# The non-ASCII characters that case-insensitive matching takes for ASCII letters (İ, ı
# and ſ for i, i and s; the Kelvin sign for k): folded before the anchors are looked for.
_ASCII_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_QUOTED_KEY = re.compile(r"[\"'`][A-Za-z0-9]{32}")
_FOLD_KEPT_CHARS = 8192


def _fold(text: str) -> str:
    return (text if text.isascii() else text.translate(_ASCII_FOLD)).lower()


def folded(text: str) -> str:
    """`text` lower-cased, with the non-ASCII characters that case-insensitive matching
    takes for ASCII letters folded to them: an ASCII literal a case-insensitive pattern
    matches in `text` is a substring of this. Texts up to 8 KB are kept for the next ask
    (the same error message is checked by several patterns in turn)."""
    return _folded_kept(text) if len(text) <= _FOLD_KEPT_CHARS else _fold(text)


_folded_kept = functools.lru_cache(maxsize=256)(_fold)


def _rooted() -> tuple[tuple[str, tuple[tuple[int, str | tuple[str, ...]], ...]], ...]:
    """Each anchor under the first piece of `_ANY_ANCHOR` inside one of its strings: text
    without that piece cannot hold the anchor, so most anchors are never looked for."""
    rooted: dict[str, list[tuple[int, str | tuple[str, ...]]]] = {}
    for index, anchors in _INDEXED_ANCHORS:
        for anchor in anchors:
            pieces = (anchor,) if type(anchor) is str else anchor
            root = next(r for r in _ANY_ANCHOR if any(r in piece for piece in pieces))
            rooted.setdefault(root, []).append((index, anchor))
    return tuple((root, tuple(rooted[root])) for root in _ANY_ANCHOR if root in rooted)


_ROOTED = _rooted()


def _candidates(text: str) -> tuple[int, ...]:
    """The alternatives of `_SECRETS` that can match somewhere in `text`, in order."""
    folded_text = folded(text)
    found: set[int] = set()
    for root, anchors in _ROOTED:
        if root not in folded_text:
            continue  # the common case: clean text has few of these pieces
        for index, anchor in anchors:
            if index in found:
                continue
            if type(anchor) is str:
                if anchor in folded_text:
                    found.add(index)
            elif all(piece in folded_text for piece in anchor):
                found.add(index)
    if _UNPREFIXED_KEY in found and not _has_key_run(text):
        found.discard(_UNPREFIXED_KEY)
    if _QUOTED_KEY.search(text) is not None:
        found.add(_QUOTED)
    return tuple(sorted(found))


def _has_key_run(text: str) -> bool:
    """Whether `text` holds a `_KEY_RUN`; such a run holds no space, so it lies inside a
    word of 20 characters or more, which prose mostly has none of."""
    return max(map(len, text.split()), default=0) >= 20 and _KEY_RUN.search(text) is not None


@functools.lru_cache(maxsize=128)
def _pattern(alternatives: tuple[int, ...]) -> re.Pattern[str]:
    return re.compile("|".join(_ALTERNATIVES[index] for index in alternatives))


def may_hold_secret(text: str) -> bool:
    """False only when `redact` would change nothing in `text` (no anchor of any secret)."""
    return bool(_candidates(text))


def redact(text: str, *, keep_names: bool = True) -> str:
    """`text` with API keys, tokens and credential headers replaced by `REDACTED`.

    With `keep_names`, what names a secret stays ("Authorization: Bearer [redacted]",
    "?key=[redacted]"); without it the header or parameter goes too ("[redacted]"). Prose
    that names a secret ("Incorrect API key provided:", "Team:") stays either way.
    """
    alternatives = _candidates(text)
    if not alternatives:
        return text

    def replace(match: re.Match[str]) -> str:
        name = match.lastgroup
        if name is None or not (keep_names or name in _KEPT_NAMES):
            return REDACTED
        return match.group(name) + REDACTED

    return _pattern(alternatives).sub(replace, text)


def bounded_message(
    text: str | None, *, limit: int = MAX_MESSAGE_CHARS, keep_names: bool = True
) -> str | None:
    """A provider's error message made safe to show: secrets redacted, on one line, at most
    `limit` code points; None when nothing is left."""
    if text is None:
        return None
    # Only the first `limit` code points are shown, so a huge page is cut long before the
    # redaction patterns run on it; the margin keeps any secret that starts in the shown
    # part whole, so it is still recognised and replaced.
    text = " ".join(text.split())[: limit + _REDACTION_MARGIN]
    text = " ".join(redact(text, keep_names=keep_names).split())
    return truncate_within(text, limit, "...") or None


_REDACTION_MARGIN = 4096


_TITLE_OPEN = re.compile("<title", re.IGNORECASE)
_TITLE_CLOSE = re.compile("</title>", re.IGNORECASE)


# Both readers below scan with str.find, each character looked at a bounded number of
# times: a hostile page (megabytes of "<a" or "<title") costs time linear in its size,
# where the equivalent regular expressions backtrack quadratically.
def strip_tags(text: str) -> str:
    """`text` with its markup tags (`<` up to the next `>`) replaced by spaces."""
    pieces: list[str] = []
    position = 0
    while True:
        start = text.find("<", position)
        if start < 0:
            break
        end = text.find(">", start + 1)
        if end < 0:
            break  # no tag closes after here, so none of the later "<" starts one either
        pieces.append(text[position:start])
        pieces.append(" ")
        position = end + 1
    pieces.append(text[position:])
    return "".join(pieces)


def page_text(text: str) -> str:
    """The readable part of a non-JSON error body: an HTML page's title, or its text."""
    title = _title(text)
    if title is not None and title.strip():
        return title
    return strip_tags(text) if "<" in text else text


def _title(text: str) -> str | None:
    """The text of the first `<title ...>...</title>` element, or None."""
    opening = _TITLE_OPEN.search(text)
    if opening is None:
        return None
    start = text.find(">", opening.end())
    if start < 0:
        return None
    closing = _TITLE_CLOSE.search(text, start + 1)
    return text[start + 1 : closing.start()] if closing is not None else None


POLICY_BLOCK = re.compile(
    r"\b(?:blocked|flagged|filtered)\b.{0,60}?\b(?:content[ _-]?filter\w*|guardrails?"
    r"|safety|moderation|(?:content|usage|acceptable[ -]use) polic(?:y|ies))\b"
    r"|\b(?:violat\w*|against)\b.{0,40}?\b(?:content|usage|acceptable[ -]use) polic(?:y|ies)\b",
    re.IGNORECASE | re.DOTALL,
)
"""An error message that says a filter blocked the input or output ("Output blocked by
content filtering policy", "This request has been blocked by our content filters") or
that the request breaks a usage policy ("This request violates our Usage Policy")."""


_POLICY_WORDS = ("blocked", "flagged", "filtered", "violat", "against")
"""Words `POLICY_BLOCK` cannot match without: a message with none of them is not asked."""


def says_blocked(message: str | None, pattern: re.Pattern[str] = POLICY_BLOCK) -> bool:
    """Whether an error message says the request or its output was blocked by a policy,
    by `pattern` (each provider words it its own way)."""
    if message is None:
        return False
    if pattern is POLICY_BLOCK and not may_contain(message, _POLICY_WORDS):
        return False
    return pattern.search(message) is not None


def may_contain(text: str, words: tuple[str, ...]) -> bool:
    """Whether any of `words` (lower-case ASCII) can be matched in `text` by a
    case-insensitive pattern: False means a pattern that needs one of them cannot match."""
    lowered = folded(text)
    return any(word in lowered for word in words)


# --- errors inside a stream -------------------------------------------------------------


def stream_error(result: LLMResponse, fallback: str) -> StreamError:
    """The `StreamError` of an error `parse_error` read; `fallback` when it has no message."""
    error = result.error
    message = error.message if error is not None else None
    return StreamError(message or fallback, error)


def error_events(result: LLMResponse, decided: Verdict | None, fallback: str) -> list[StreamEvent]:
    """An error event in a stream: the error, and the verdict `parse_error` gave its body
    (a policy block is a content filter with the message as its explanation). After a
    refusal or filter verdict only the error is added: its message does not explain the
    block."""
    events: list[StreamEvent] = [stream_error(result, fallback)]
    if decided is None or decided.finish_reason not in FINAL:
        events.append(Verdict(result.finish_reason, result.raw_finish_reason, result.stop_details))
    return events
