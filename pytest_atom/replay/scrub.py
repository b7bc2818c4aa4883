"""Decide what a secret is, in one place, so cassettes, traces and reports never store one.

Everything written to disk passes through a Scrubber: known values from the environment
become a placeholder naming their variable (a reader still sees *which* credential went
where), well-known token shapes and private keys are redacted even when no variable
announced them, and detect-secrets (detector.py) finds the rest: assignments to
secret-looking names and provider tokens, plain and JSON-escaped. Secret values are never
printed, logged, or shown in a repr.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_atom.environment import passed
from pytest_atom.errors import EnvError
from pytest_atom.files import write_atomic
from pytest_atom.replay.detector import find_secrets, is_secret_name, json_forms
from pytest_atom.spec.env import expand_env
from pytest_atom.spec.types import Spec
from pytest_atom.words import Scrubbed

#: Env var names whose values are secrets: a case-insensitive *substring* match. It
#: over-matches (KEYBOARD_LAYOUT) on purpose: a needless placeholder is cheap, a missed key
#: is a leak, and harmless values (booleans, existing paths) are spared by value instead.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CRED|AUTH|PRIVATE|COOKIE|SESSION|SIGNATURE|DSN|SALT",
    re.IGNORECASE,
)

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
#: A found value this long is replaced even inside a longer token.
_ANYWHERE = 16
# Matched first in both passes and returned unchanged: scrubbing is idempotent, and a value
# that happens to occur inside a placeholder cannot nest placeholders.
_PLACEHOLDER = re.compile(r"<SECRET:[A-Za-z0-9_]+>")
# Values secret-looking names often hold that are plainly not secrets.
_NOT_SECRET = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "0", "1"})
_TOK = r"[A-Za-z0-9._~+/=-]"
_BEARER = re.compile(r"bearer\s+", re.IGNORECASE)
#: A line break as written or inside a JSON string.
_BREAK = r"(?:\r?\n|\\r\\n|\\n)"
#: A private key, from its first line (detect-secrets' PrivateKeyDetector's markers) to its
#: END line; when cut off (``head``), as far as its lines look like key material.
_KEY_KIND = r"(?:DSA |EC |OPENSSH |PGP |RSA |SSH2 ENCRYPTED )?PRIVATE KEY(?: BLOCK)?"
_KEY_BODY = (
    rf"(?:{_BREAK}(?!-{{4,5}} ?END)(?:[A-Za-z][A-Za-z-]*: [^\n\\\"]*|[A-Za-z0-9+/=]+))*"
    rf"(?:{_BREAK}-{{4,5}} ?END {_KEY_KIND} ?-*)?"
)
# Each branch opens with literal text, like every other shape (see _b).
_PRIVATE_KEYS = (
    rf"----(?:-? ?)BEGIN {_KEY_KIND} ?-*{_KEY_BODY}",
    rf"PuTTY-User-Key-File-[0-9][^\n\\\"]*{_KEY_BODY}",
)
#: Basic auth in a URL (detect-secrets' BasicAuthDetector pattern): the password goes.
_BASIC_AUTH = re.compile(r"(://[^:/?#\[\]@!$&'()*+,;=\s]+:)[^:/?#\[\]@!$&'()*+,;=\s<>]+(?=@)")


#: Secrets this process was told of (`remember_secrets`), value -> name: every default
#: Scrubber made afterwards treats them as secrets.
_REMEMBERED: dict[str, str] = {}
_REMEMBERED_LOCK = threading.Lock()
#: `.env*` files that hold examples for a reader, not this machine's values.
_ENV_TEMPLATES = re.compile(r"\.(example|sample|template|dist|defaults?)$", re.IGNORECASE)
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*(.*?)\s*$")
#: A value shaped like a token: no spaces, letters and digits, long, neither a URL nor a path
#: nor an option (``--max-old-space-size=4096``).
_TOKEN_SHAPE = re.compile(r"^(?=.*[A-Za-z])(?=.*[0-9])(?!.*://)[^/\s-][^\s]{15,}$")
#: Secret values shorter than this are never scrubbed: they would shred ordinary text.
MIN_SECRET_LENGTH = 8


def secret_values(env: Mapping[str, str]) -> dict[str, str]:
    """NAME -> value of the values in `env` that count as secrets, the one rule for a spec's
    `env:`, `pass_env:` and ``.env*`` files: a secret-looking name or a token-shaped value,
    that `_is_secret_value` keeps (``DEBUG: "1"`` stays: it would shred every text)."""
    return {
        name: value
        for name, value in env.items()
        if (SECRET_NAME.search(name) or _TOKEN_SHAPE.match(value))
        and _is_secret_value(value, MIN_SECRET_LENGTH)
    }


def env_file_secrets(folder: Path) -> dict[str, str]:
    """NAME -> value of the secrets (`secret_values`) in `folder`'s own ``.env*`` files (not
    ``.env.example`` and the like), from ``[export] NAME=value`` lines, quotes removed."""
    found: dict[str, str] = {}
    try:
        files = sorted(p for p in Path(folder).glob(".env*") if p.is_file())
    except OSError:
        return found
    for path in files:
        if _ENV_TEMPLATES.search(path.name):
            continue
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            match = _ENV_LINE.match(line)
            if match is None or line.lstrip().startswith("#"):
                continue
            name, value = match.group(1), match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            elif " #" in value:
                value = value.split(" #", 1)[0].rstrip()
            if secret_values({name: value}):
                found.setdefault(name, value)
    return found


def remember_secrets(values: Mapping[str, str]) -> None:
    """Treat `values` (NAME -> value) as known secrets in every default Scrubber made from now
    on in this process: ``<SECRET:NAME>`` in every request and every file written. A value
    remembered first keeps its first name."""
    with _REMEMBERED_LOCK:
        for name, value in values.items():
            _REMEMBERED.setdefault(value, name)


def remember_env_files(*folders: Path | None) -> None:
    """`remember_secrets` for the secrets of `folders`' env files: a workspace's ignored
    ``.env`` the agent must never see (the read guard keeps it out; this scrubs the rest)."""
    for folder in folders:
        if folder is not None:
            remember_secrets(env_file_secrets(folder))


def spec_secrets(spec: Spec, caller: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secrets a run of `spec` hands its processes: the values its `env:` sets (``${VAR}``
    expanded from `caller`, default this process's environment; an entry naming an unset
    variable is left out) and the caller's values of the names its `pass_env:` passes."""
    source = os.environ if caller is None else caller
    # What `pass_env:` passes beyond the defaults (PATH, locale, proxies, certificates).
    defaults = passed((), source)
    env = {k: v for k, v in passed(spec.pass_env, source).items() if k not in defaults}
    for name, value in spec.env.items():
        try:
            env.update(expand_env(replace(spec, env={name: value}), source))
        except EnvError:
            continue
    return secret_values(env)


def remember_spec_secrets(spec: Spec, *folders: Path | None) -> None:
    """Remember the secrets of `spec` and of the env files in `folders`, before any Scrubber."""
    remember_secrets(spec_secrets(spec))
    remember_env_files(*folders, spec.workspace, spec.root)


def _b(shape: str) -> str:
    """Anchor a shape at a token boundary ("task-..." is no "sk-..." key) *after* its first
    letter: re only skips ahead to candidates when every branch opens with a literal."""
    return f"{shape[0]}(?<![A-Za-z0-9]{shape[0]}){shape[1:]}"


_SHAPES = re.compile(
    "|".join(
        (
            _PLACEHOLDER.pattern,
            *_PRIVATE_KEYS,
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
    """Alternatives for ``forms`` shaped as a trie: the cost per position does not grow with
    the number of secrets, and greedy optional suffixes make the longest value win."""
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
    """Short and trivial values would shred ordinary text, so they are never secrets; nor is
    a value naming existing absolute paths (SSH_AUTH_SOCK): a location, not a secret."""
    if len(value) < min_length or value.strip().lower() in _NOT_SECRET:
        return False
    parts = [os.path.expanduser(part) for part in value.split(os.pathsep)]
    return not all(os.path.isabs(part) and os.path.exists(part) for part in parts)


class Scrubber:
    """Replaces secret values in text with stable placeholders like ``<SECRET:GITHUB_TOKEN>``:
    `env`'s (default: ``os.environ`` and the remembered secrets) whose names match
    SECRET_NAME, and ``extra``'s ``{placeholder_name: value}`` pairs, which win."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | None = None,
        min_length: int = 8,
    ) -> None:
        source = os.environ if env is None else env
        pairs = list((extra or {}).items())
        pairs += sorted((n, v) for n, v in source.items() if SECRET_NAME.search(n))
        if env is None:  # the default: this machine's secrets, its env files' too
            with _REMEMBERED_LOCK:
                pairs += sorted((n, v) for v, n in _REMEMBERED.items())
        self._names: dict[str, str] = {}  # every form of every value -> placeholder name
        count = 0
        for name, value in pairs:
            if not _is_secret_value(value, min_length) or value in self._names:
                continue
            count += 1
            label = re.sub(r"[^A-Za-z0-9_]", "_", name) or "SECRET"
            # Secrets often sit inside JSON request bodies, escaped.
            for form in (
                value,
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
            ):
                self._names.setdefault(form, label)
        self._count = count
        forms = _trie(list(self._names))
        self._values = re.compile("|".join([_PLACEHOLDER.pattern, *forms])) if forms else None
        # Values found so far (a model may echo a secret it read); shared by the gateway's threads.
        self._found: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def _remember(self, values: Iterable[str]) -> None:
        with self._lock:
            self._found |= frozenset(values)

    def __repr__(self) -> str:
        return f"Scrubber(<{self._count} known values>)"

    def _known(self, text: str, found: list[str]) -> str:
        """The passes that need no detector: known values, token shapes, basic-auth passwords."""

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

        def basic(match: re.Match[str]) -> str:
            found.append("REDACTED")
            return match.group(1) + _REDACTED

        # Substring checks run at C speed: most text holds no known value at all.
        if self._values is not None and any(form in text for form in self._names):
            text = self._values.sub(value, text)
        text = _SHAPES.sub(shape, text)
        return _BASIC_AUTH.sub(basic, text) if "://" in text else text

    def _scrub(self, text: str, found: list[str]) -> str:
        text = self._known(text, found)
        values = find_secrets(text)
        self._remember(values)
        return _replace_found(text, values | self._found, found)

    def scrub(self, text: str) -> Scrubbed:
        """Known values become ``<SECRET:NAME>``; token shapes, private keys and what
        detect-secrets finds ``<SECRET:REDACTED>``, wherever the found value occurs. A value
        found earlier by this Scrubber is redacted too (an answer repeating a secret its
        request assigned); `scrub_obj`'s stay within the object. Scrub before cutting."""
        return Scrubbed(self._scrub(text, []))

    def scrub_obj(self, obj: Any) -> Any:
        """A deep copy of JSON-like data with every string, dict keys included, scrubbed. A
        value found anywhere in ``obj`` is replaced in every string of it: the result depends
        on ``obj`` alone, so a replayed request scrubs exactly as its recording did."""
        found: list[str] = []
        values: set[str] = set()

        def first(item: Any) -> Any:
            if isinstance(item, str):
                text = self._known(item, found)
                values.update(find_secrets(text))
                return text
            if isinstance(item, Mapping):
                out = {}
                for key, value in item.items():
                    key, value = first(key), first(value)
                    if isinstance(key, str) and isinstance(value, str) and is_secret_name(key):
                        values.update(find_secrets(f"{json.dumps(key)}: {json.dumps(value)}"))
                    out[key] = value
                return out
            if isinstance(item, list):
                return [first(x) for x in item]
            if isinstance(item, tuple):
                return tuple(first(x) for x in item)
            return item

        scrubbed = first(obj)
        if not values:  # the usual case: nothing found, no second pass
            return scrubbed
        self._remember(values)
        return _map_strings(scrubbed, lambda text: _replace_found(text, values, found))

    def scrub_tree(self, *folders: Path) -> list[Path]:
        """Scrub every file below the ``folders`` in place, as one object (a secret assigned
        in one is redacted in all); the files that changed. Bytes that are not UTF-8 pass
        through; symlinks are not followed; a rewrite replaces the file atomically."""
        files = sorted(
            p
            for folder in folders
            for p in Path(folder).rglob("*")
            if p.is_file() and not p.is_symlink()
        )
        texts = [p.read_bytes().decode("utf-8", "surrogateescape") for p in files]
        changed = []
        for path, before, after in zip(files, texts, self.scrub_obj(texts), strict=True):
            if after != before:
                write_atomic(path, after.encode("utf-8", "surrogateescape"))
                changed.append(path)
        return changed

    def contains_secret(self, text: str) -> list[str]:
        """Placeholder names of the secrets in ``text`` (first-seen order, no repeats); [] if
        clean. The same passes as `scrub`, so the check and the fix never disagree."""
        found: list[str] = []
        self._scrub(text, found)
        return list(dict.fromkeys(found))


def _map_strings(obj: Any, change: Callable[[str], str]) -> Any:
    if isinstance(obj, str):
        return change(obj)
    if isinstance(obj, dict):
        return {_map_strings(k, change): _map_strings(v, change) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_strings(item, change) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_map_strings(item, change) for item in obj)
    return obj


def _replace_found(text: str, values: Iterable[str], found: list[str]) -> str:
    """Every form (plain, JSON-escaped) of every found value becomes ``<SECRET:REDACTED>``."""
    forms = frozenset(form for value in values for form in json_forms(value) if form in text)
    if not forms:
        return text

    def redact(match: re.Match[str]) -> str:
        if _PLACEHOLDER.fullmatch(hit := match.group(0)):
            return hit
        found.append("REDACTED")
        return _REDACTED

    return _found_pattern(forms).sub(redact, text)


@functools.lru_cache(maxsize=1024)
def _found_pattern(forms: frozenset[str]) -> re.Pattern[str]:
    """Longest form first. A short one only at token boundaries (a found ``abc123`` leaves
    ``xabc1234`` alone); a long one anywhere, as nothing else contains it by chance."""

    def bounded(form: str) -> str:
        if len(form) >= _ANYWHERE:
            return re.escape(form)
        return f"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])"

    ordered = sorted(forms, key=lambda f: (-len(f), f))
    return re.compile("|".join([_PLACEHOLDER.pattern, *map(bounded, ordered)]))
