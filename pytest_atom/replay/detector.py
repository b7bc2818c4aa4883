"""Find secret values in free text with Yelp's detect-secrets, cheaply enough for every body.

What the Scrubber's known values and token shapes miss is a secret the run never announced
(``AWS_SECRET_ACCESS_KEY=…`` in a file the agent reads, a provider token in a tool result).

detect-secrets scans at milliseconds a line, and every request body resends the system prompt
and the whole conversation: so a cheap trigger (an assignment to a secret-ish name, or a long
token) picks the few windows worth a look, findings are cached per window, and the package
is imported only when a first window needs it.

Entropy alone is never enough: thinking signatures, tool-use ids and hashes are random
too, and scrubbing them would break replay. It is the second opinion for names the
keyword plugin does not list (``*_TOKEN``, ``*_AUTH``, ``*_CREDENTIALS``, bare ``*KEY``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from re import Match, Pattern
from typing import Any

#: Assignments to secret-ish names, in any notation (``X=``, ``x:``, ``"x":``, ``x :=``): a
#: loose prefilter (its letter pairs may cross: "Tey") that lets re skip ahead to candidates.
_NAME_TRIGGER = re.compile(
    r"[SsPpTtAaCcKk](?i:ecret|ass|wd|oken|uth|redential|ey|ontrase)(?<!<SECRET)"
    r"\w*[\\'\"\]]{0,8}\s*[:=]"
)
#: Tokens long enough to be a provider's key (JWT, GitHub, AWS, Slack, Stripe, ...).
_TOKEN_TRIGGER = re.compile(r"[A-Za-z0-9_+/=-]{20,}")
#: A token this long is an image, a thinking signature or a blob: no credential is.
_MAX_TOKEN = 2048
#: How far around a trigger its window reaches (cut sooner at a line break, real or escaped).
_BEFORE, _AFTER, _MARGIN = 200, 400, 120
#: What a provider plugin sees before a long token: its keyword (``aws_secret_key = "…"``).
_PROVIDER_CONTEXT = 64
_MIN_VALUE = 6
#: The Scrubber's placeholders, masked before detection: never a value to find again.
_PLACEHOLDER = re.compile(r"<SECRET:[A-Za-z0-9_]+>")
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_.+/=-]*")
_NAME_START = re.compile(r"\w*$")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@+-]*(?:/[\w.@+-]*)*")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_NOT_SECRET = frozenset(
    {"none", "null", "true", "false", "changeme", "redacted", "placeholder", "undefined"}
)


_SECRET_NAME = re.compile(r"secret|pass|pwd|token|auth|credential|key|contrase", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a mapping key names a secret-ish value (so ``{name: value}`` gets a look)."""
    return _SECRET_NAME.search(name) is not None


def find_secrets(text: str) -> frozenset[str]:
    """The secret values detect-secrets finds in ``text``, JSON-escaped text included, decoded."""
    if len(text) < _MIN_VALUE + 4:  # no room for a name and a value
        return frozenset()
    if _CACHED_TEXT[0] <= len(text) < _CACHED_TEXT[1]:
        return _find_cached(text)
    return _find(text)


def _find(text: str) -> frozenset[str]:
    windows: set[str] = set()
    for trigger in (_NAME_TRIGGER, _TOKEN_TRIGGER):
        covered = -1  # where the last window ends: a trigger well inside it adds nothing
        for match in trigger.finditer(text):
            start, end = match.span()
            if end - start <= _MAX_TOKEN and end + _MARGIN > covered:
                stop = _line_end(text, end)
                windows.add(text[_line_start(text, start) : stop])
                covered = stop
    found: set[str] = set()
    for window in windows:
        found |= _window_values(window)
    return frozenset(found)


#: Strings recur whole (a request resends the system prompt, the tools and the history): the
#: findings of those long enough to be worth it, and short enough to keep, are cached too.
_CACHED_TEXT = (512, 64 * 1024)
_find_cached = functools.lru_cache(maxsize=512)(_find)


def _line_start(text: str, pos: int) -> int:
    low = max(0, pos - _BEFORE)
    real, escaped = text.rfind("\n", low, pos), text.rfind("\\n", low, pos)
    return max(low, real + 1 if real >= 0 else low, escaped + 2 if escaped >= 0 else low)


def _line_end(text: str, pos: int) -> int:
    high = min(len(text), pos + _AFTER)
    ends = [i for i in (text.find("\n", pos, high), text.find("\\n", pos, high)) if i >= 0]
    end = min(ends, default=high)
    while end > pos and text[end - 1] == "\\":  # the whole escape (``\\\\n``: escaped twice)
        end -= 1
    return end


def _unescape(text: str) -> str:
    def one(match: Match[str]) -> str:
        code = match.group(1)
        if code[0] == "u":
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


#: A line break escaped once or twice (JSON text inside JSON).
_ESCAPED_BREAK = re.compile(r"(?:\\{1,2}r)?\\{1,2}n")


def _views(window: str) -> Iterator[str]:
    """The window's lines as written and as decoded from up to two levels of JSON escaping;
    a view still escaped is cut at its escaped line breaks, so no value runs on past one."""
    seen: set[str] = set()
    view = window
    for _ in range(3):
        for line in (cut for row in view.splitlines() for cut in _ESCAPED_BREAK.split(row)):
            if line not in seen:
                seen.add(line)
                yield line
        if "\\" not in view:
            break
        view = _unescape(view)


@functools.lru_cache(maxsize=8192)
def _window_values(window: str) -> frozenset[str]:
    """Every secret value in one window; cached, since bodies repeat the same windows."""
    detector = _detector()
    found: set[str] = set()
    for line in _views(_PLACEHOLDER.sub("<>", window)):
        # Only the plugins a line's triggers call for, where they call for them: a provider's
        # key is a long token (some want a keyword before it); keywords start at a name.
        for piece in {
            line[max(0, t.start() - _PROVIDER_CONTEXT) : t.end() + 2]
            for t in _TOKEN_TRIGGER.finditer(line)
            if t.end() - t.start() <= _MAX_TOKEN
        }:
            for plugin in detector.providers:
                for value in plugin(piece):
                    whole = _whole_token(line, value)
                    if _plausible(whole, strict=False):
                        found.add(whole)
        for trigger in _NAME_TRIGGER.finditer(line):
            found.update(_assignments(detector, line, trigger.start(), trigger.end()))
        if "==" in line or "!=" in line:  # ``"hunter2" == password``: the value comes first
            for pattern, group in detector.comparisons:
                for match in pattern.finditer(line):
                    if _plausible(value := match.group(group), strict=False):
                        found.add(value)
    return frozenset(found)


def _assignments(detector: _Detector, line: str, start: int, end: int) -> Iterator[str]:
    """Values assigned to the name a trigger found at ``line[start:end]``: the keyword
    plugin's patterns anchored where a listed name starts (along a line, ~0.2 ms each)."""
    begin = _NAME_START.search(line, max(0, start - 64), start)
    begin_at = begin.start() if begin else start
    for names in detector.names:
        name = names.name.search(line, begin_at, end)
        if name is None:
            continue
        for pattern, group in names.shapes:
            match = pattern.match(line, name.start())
            if match is None:
                continue
            value = _assigned_value(line, match, group)
            if _plausible(value, strict=names.strict) and (
                not names.strict or detector.random(value)
            ):
                yield value


def _whole_token(line: str, value: str) -> str:
    """A provider match extended to the end of its token: detect-secrets' JWT pattern stops
    before the signature, its Slack pattern at the first capital letter."""
    at = line.find(value)
    if at < 0:
        return value
    tail = _TOKEN_TAIL.match(line, at + len(value))
    return (value + (tail.group(0) if tail else "")).rstrip(".")


def _assigned_value(line: str, match: Match[str], group: int) -> str:
    """The assigned value: whole when quoted, else its first word (prose may follow it);
    empty for a reference to another variable in code (``key = win32con``, ``a = b.c``)."""
    value = match.group(group) or ""
    start = match.start(group)
    if start > 0 and line[start - 1] in "'\"`":
        return value
    words = value.split()
    word = words[0].rstrip(".,;:)]}>`'\"") if words else ""
    operator = line[match.start() : start]
    if _CODE_NAME.fullmatch(word) and ("." in word or re.search(r"\s=|=\s", operator)):
        return ""
    return word


def _plausible(value: str, *, strict: bool) -> bool:
    """Could this value be a credential, rather than a name, a path, a template or a number?
    ``strict``: also 12 characters or more, with a digit (random-looking: the caller checks)."""
    from detect_secrets.filters import heuristic

    if len(value) < (12 if strict else _MIN_VALUE) or "<" in value or ">" in value:
        return False  # markup, a template or one of our placeholders
    if any(c.isspace() for c in value):
        return False  # a phrase: prose far more often than a passphrase
    if value.lower() in _NOT_SECRET or value[0] in "$%*":
        return False
    if (
        heuristic.is_templated_secret(value)
        or heuristic.is_not_alphanumeric_string(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
    ):
        return False
    if "(" in value or "[" in value or _URL.match(value) or _PATH.fullmatch(value):
        return False  # a call, an index, a URL (basic auth is its own rule) or a path
    has_digit = any(c.isdigit() for c in value)
    if _CODE_NAME.fullmatch(value) and not has_digit:
        return False  # a word or a dotted name: `password: required`, `key: settings.key`
    return has_digit if strict else True


@dataclass(frozen=True)
class _Names:
    """Secret-ish names, and the assignment shapes (pattern, value group) that start at one."""

    name: Pattern[str]
    shapes: tuple[tuple[Pattern[str], int], ...]
    strict: bool  # the value must also look random (names the keyword plugin does not list)


@dataclass(frozen=True)
class _Detector:
    providers: tuple[Callable[[str], Iterator[str]], ...]
    names: tuple[_Names, ...]
    comparisons: tuple[tuple[Pattern[str], int], ...]
    random: Callable[[str], bool]


#: Provider plugins whose findings are not credentials (public IPs), or are handled as a
#: whole by the Scrubber (private key blocks, basic-auth passwords).
_EXCLUDED = frozenset({"IPPublicDetector", "PrivateKeyDetector", "BasicAuthDetector"})


def load_detector() -> None:
    """Import detect-secrets now, not at the first window that needs it."""
    _detector()


@functools.cache
def _detector() -> _Detector:
    """detect-secrets' plugins, loaded on first use (importing the package is slow)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    classes: list[Any] = sorted(
        get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__
    )
    providers = tuple(
        cls().analyze_string
        for cls in classes
        if issubclass(cls, RegexBasedDetector)
        and cls.__module__.startswith("detect_secrets.plugins.")
        and cls.__name__ not in _EXCLUDED
    )
    listed = {
        **keyword.CONFIG_DENYLIST_REGEX_TO_GROUP,
        **keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    }
    # The keyword plugin's own assignment shape, for the names it does not list.
    ws = keyword.OPTIONAL_WHITESPACE
    unlisted = re.compile(
        rf"(?:token|auth|credential|key)\w*({keyword.CLOSING})?{ws}(?::=?|={{1,3}}|=>){ws}"
        rf"({keyword.QUOTE}?)({keyword.SECRET})(\2)",
        re.IGNORECASE,
    )
    names = (
        _Names(
            re.compile(keyword.DENYLIST_REGEX, re.IGNORECASE),
            tuple(
                (p, g) for p, g in listed.items() if p.pattern.startswith(keyword.DENYLIST_REGEX)
            ),
            strict=False,
        ),
        _Names(
            re.compile("token|auth|credential|key", re.IGNORECASE), ((unlisted, 3),), strict=True
        ),
    )
    comparisons = tuple(
        (p, g) for p, g in listed.items() if not p.pattern.startswith(keyword.DENYLIST_REGEX)
    )
    base64, hexa = Base64HighEntropyString(limit=4.0), HexHighEntropyString(limit=3.0)

    def random(value: str) -> bool:
        """Random enough to be a generated token: detect-secrets' hex limit for hex, else a
        limit that grows with the length (a short token cannot reach 4 bits a character),
        so ``oauth-2025-04-20`` or ``types-auth0-python`` stay while real tokens go."""
        if all(c in hexa.charset for c in value):
            return bool(hexa.calculate_shannon_entropy(value) >= hexa.entropy_limit)
        limit = min(base64.entropy_limit, 0.85 * math.log2(len(value)))
        return bool(base64.calculate_shannon_entropy(value) >= limit)

    return _Detector(providers=providers, names=names, comparisons=comparisons, random=random)


def json_forms(value: str) -> list[str]:
    """``value`` as written, JSON-escaped, and escaped twice: how it appears in a body."""
    once = json.dumps(value)[1:-1]
    return list(
        dict.fromkeys(
            (value, once, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(once)[1:-1])
        )
    )
