"""Decide what a secret is, in one place, so cassettes, traces and reports never store one.

Everything written to disk passes through a Scrubber: known values from the environment
are replaced by a placeholder naming their variable (so a reader still sees *which*
credential went where), and well-known token shapes are redacted even when no variable
announced them. Secret values are never printed, logged, or shown in a repr.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SECRET_HEADERS", "SECRET_NAME", "Scrubber"]

#: Env var names whose values are secrets: a case-insensitive *substring* match. It
#: over-matches (KEYBOARD_LAYOUT) on purpose: a needless placeholder is cheap, a missed key
#: is a leak, and harmless values (booleans, existing paths) are spared by value instead.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)

#: Header names (lower-case) never stored: their whole value is a credential or an account id.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "cookie",
        "set-cookie",
        "proxy-authorization",
        "anthropic-organization-id",
        "x-organization-id",
        "openai-organization",
    }
)

_REDACTED = "<SECRET:REDACTED>"
# Matched first in both passes and returned unchanged: scrubbing is idempotent, and a value
# that happens to occur inside a placeholder cannot nest placeholders.
_PLACEHOLDER = re.compile(r"<SECRET:[A-Za-z0-9_]+>")
# Values secret-looking names often hold that are plainly not secrets.
_NOT_SECRET = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "0", "1"})
_TOK = r"[A-Za-z0-9._~+/=-]"
_BEARER = re.compile(r"bearer\s+", re.IGNORECASE)


def _b(shape: str) -> str:
    """Anchor a shape at a token boundary ("task-..." is no "sk-..." key) *after* its first
    letter: re only skips ahead to candidate characters when every branch opens with a literal.
    """
    return f"{shape[0]}(?<![A-Za-z0-9]{shape[0]}){shape[1:]}"


_SHAPES = re.compile(
    "|".join(
        (
            _PLACEHOLDER.pattern,
            r"-----BEGIN[A-Z ]*PRIVATE KEY-----.*?-----END[A-Z ]*PRIVATE KEY-----",
            _b(r"sk-ant-[A-Za-z0-9_-]{8,}"),
            _b(r"sk-proj-[A-Za-z0-9_-]{20,}"),
            _b(r"sk-[A-Za-z0-9]{20,}"),
            _b(r"gh[pousr]_[A-Za-z0-9]{20,}"),
            _b(r"github_pat_[A-Za-z0-9_]{20,}"),
            _b(r"AKIA[0-9A-Z]{16}"),
            _b(r"xox[abprs]-[A-Za-z0-9-]{10,}"),
            # The token must hold a digit or be long, so prose like "Bearer authentication" survives.
            *(_b(rf"{c}(?i:earer)\s+(?:(?={_TOK}*\d){_TOK}{{8,}}|{_TOK}{{20,}})") for c in "Bb"),
        )
    ),
    re.DOTALL,
)


def _trie(forms: list[str]) -> list[str]:
    """Alternatives for ``forms`` shaped as a trie: one branch per first character, so the cost
    per position does not grow with the number of secrets, and greedy optional suffixes make
    the longest value win (one containing another is replaced whole, not in pieces).
    """
    root: dict[str, Any] = {}
    for form in forms:
        node = root
        for char in form:
            node = node.setdefault(char, {})
        node[""] = {}

    def branches(node: dict[str, Any]) -> list[str]:
        out = []
        for chain, child in sorted(node.items()):
            if not chain:
                continue
            while len(child) == 1 and "" not in child:  # compress runs without a fork
                ((char, child),) = child.items()
                chain += char
            rest = branches(child)
            group = f"(?:{'|'.join(rest)})" + ("?" if "" in child else "") if rest else ""
            out.append(re.escape(chain) + group)
        return out

    return branches(root)


def _is_secret_value(value: str, min_length: int) -> bool:
    """Short and trivial values would shred ordinary text, so they are never treated as secrets.

    A value naming existing absolute paths (SSH_AUTH_SOCK, GOOGLE_APPLICATION_CREDENTIALS) is
    a location, not a secret; base64 that merely starts with "/" names nothing and stays secret.
    """
    if len(value) < min_length or value.strip().lower() in _NOT_SECRET:
        return False
    parts = [os.path.expanduser(part) for part in value.split(os.pathsep)]
    return not all(os.path.isabs(part) and os.path.exists(part) for part in parts)


class Scrubber:
    """Replaces secret values in text with stable placeholders like ``<SECRET:GITHUB_TOKEN>``.

    ``env`` (default: ``os.environ``, read once here) contributes the values of variables whose
    names match SECRET_NAME; ``extra`` adds explicit ``{placeholder_name: value}`` pairs and
    wins when both name the same value. Both obey the same length and triviality rules.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | None = None,
        min_length: int = 8,
    ) -> None:
        source = os.environ if env is None else env
        pairs = list((extra or {}).items())
        pairs += sorted((n, v) for n, v in source.items() if SECRET_NAME.search(n))
        self._names: dict[str, str] = {}  # every form of every value -> placeholder name
        count = 0
        for name, value in pairs:
            if not _is_secret_value(value, min_length) or value in self._names:
                continue
            count += 1
            label = re.sub(r"[^A-Za-z0-9_]", "_", name) or "SECRET"
            # Secrets often sit inside JSON request bodies, where quotes, backslashes and
            # non-ASCII characters appear escaped.
            for form in (
                value,
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
            ):
                self._names.setdefault(form, label)
        self._count = count
        forms = _trie(list(self._names))
        self._values = re.compile("|".join([_PLACEHOLDER.pattern, *forms])) if forms else None

    def __repr__(self) -> str:
        return f"Scrubber(<{self._count} known values>)"

    def _scrub(self, text: str, found: list[str]) -> str:
        def value(match: re.Match[str]) -> str:
            if _PLACEHOLDER.fullmatch(hit := match.group(0)):
                return hit
            found.append(self._names[hit])
            return f"<SECRET:{found[-1]}>"

        def shape(match: re.Match[str]) -> str:
            if _PLACEHOLDER.fullmatch(hit := match.group(0)):
                return hit
            found.append("REDACTED")
            bearer = _BEARER.match(hit)
            return (bearer.group(0) if bearer else "") + _REDACTED

        # Substring checks run at C speed: most text holds no known value at all.
        if self._values is not None and any(form in text for form in self._names):
            text = self._values.sub(value, text)
        return _SHAPES.sub(shape, text)

    def scrub(self, text: str) -> str:
        """Known values become ``<SECRET:NAME>``, then known token shapes ``<SECRET:REDACTED>``."""
        return self._scrub(text, [])

    def scrub_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Drop SECRET_HEADERS (any case) entirely; scrub the values of the rest."""
        return {k: self.scrub(v) for k, v in headers.items() if k.lower() not in SECRET_HEADERS}

    def scrub_obj(self, obj: Any) -> Any:
        """A deep copy of JSON-like data with every string, dict keys included, scrubbed."""
        scrub = self.scrub_obj
        if isinstance(obj, str):
            return self.scrub(obj)
        if isinstance(obj, Mapping):
            return {scrub(k): scrub(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [scrub(item) for item in obj]
        if isinstance(obj, tuple):
            return tuple(scrub(item) for item in obj)
        return obj

    def contains_secret(self, text: str) -> list[str]:
        """Placeholder names of the secrets in ``text`` (first-seen order, no repeats); [] if clean.

        Runs exactly the passes scrub() runs, so the check and the fix never disagree.
        """
        found: list[str] = []
        self._scrub(text, found)
        return list(dict.fromkeys(found))
