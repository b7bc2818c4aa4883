"""Cassettes: one spec's recorded model traffic, in vcrpy's YAML format.

vcrpy (9.x) loads these files, and so do its tools, but the gateway reads and writes them
itself: vcrpy's httpx stub holds a streamed body back until it is complete, and its
Cassette has no locking. Request bodies are stored as indented JSON and responses as SSE
text, both as YAML block strings, so a cassette diff in a pull request can be read.

Format 2 (``metadata.format``) stores what every request repeats once: each distinct
``system`` prompt and ``tools`` list, and each message more than one request carries, sits
under ``metadata.shared`` by a short content hash, and request bodies refer to it as
``{"$shared": "tools-9b1c..."}`` (a non-bare Claude Code request carries ~50 kB of tool
schemas and system prompt). Loading resolves the references; bodies that used the same
block share one object, which nothing may change in place. Format 1 (every body whole)
still loads; vcrpy loads both, as ``shared`` lives inside its ``metadata``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pytest_atom import digest as digest_module
from pytest_atom import yamldoc
from pytest_atom.errors import AtomError, CassetteError
from pytest_atom.files import write_atomic
from pytest_atom.paths import display_path
from pytest_atom.replay import fastyaml
from pytest_atom.wire.roles import Role, header_role, legacy_role
from pytest_atom.words import plural

VCR_VERSION = 1  # vcrpy's cassette format version, the file's top-level `version:`
FORMAT = 2  # pytest-atom's layout inside it, `metadata.format`: 1 had no shared blocks
SHARED = "$shared"  # {"$shared": name}: a reference to a block under metadata.shared
_SHARED_FIELDS = ("system", "tools")  # body fields always stored once per distinct value
#: ``metadata.recall``: the hashes that let a replay recall a structured session's answer
#: (`replay.recall`); written last before the shared blocks.
RECALL = "recall"
#: Marks a broken stream kept as the CLI saw it, with what broke it: a response header, so
#: vcrpy and its tools read the file as before.
FAULT_HEADER = "x-atom-fault"
#: Marks such a stream whose connection was cut after its last event: a replay cuts it at the
#: same point, as Claude Code's next request depends on how a stream ended.
CUT_HEADER = "x-atom-cut"
_REF_LINES = re.compile(r'\{\n\s*"\$shared": ("[\w-]+")\n\s*\}')


# --- vcrpy's shape: every value a file holds checked for the type it must have ---------------
# A cassette is data from whoever committed it: a wrong value is named (`Malformed`).


class Malformed(AtomError, ValueError):
    """One interaction is not in vcrpy's shape (or refers to a shared block that is missing or
    not JSON); the message says where and what it holds."""


_MISSING: Any = object()


def kind_of(value: Any) -> str:
    """What a YAML value is, in words, for a message: `a number (12)`, `a list`, ..."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    words = {str: "text", bytes: "binary data", list: "a list", dict: "a mapping"}
    return next((w for t, w in words.items() if isinstance(value, t)), type(value).__name__)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{where} is {kind_of(value)}, expected a mapping")
    return value


def _text(value: Any, where: str, *, empty: bool = False) -> str:
    """A string; bytes (vcrpy's `!!binary`) only when they are UTF-8; None as "" if `empty`."""
    if value is None and empty:
        return ""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed(f"{where} is binary data that is not UTF-8 text") from None
    if not isinstance(value, str):
        raise Malformed(f"{where} is {kind_of(value)}, expected text")
    return value


def _headers(value: Any, where: str) -> dict[str, str]:
    """vcrpy's `{name: [value]}` (a bare string value is taken as it is); the first value."""
    if value is None:
        return {}
    out: dict[str, str] = {}
    for name, values in _mapping(value, where).items():
        if not isinstance(name, str):
            raise Malformed(f"{where} has a header name that is {kind_of(name)}")
        if isinstance(values, list):
            if not values:
                continue
            values = values[0]
        out[name] = _text(values, f"{where.removesuffix('s')} {name!r}")
    return out


def _body_json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
    except RecursionError:
        raise Malformed("request body is JSON nested too deeply to read") from None


def _status(value: Any) -> int:
    code = _mapping(value, "response status").get("code", _MISSING)
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if not isinstance(code, int) or isinstance(code, bool) or not 100 <= code <= 599:
        raise Malformed(f"response status code is {kind_of(code)}, expected an HTTP status")
    return code


@dataclass
class Interaction:
    """One request and its response; the request body is kept normalized and scrubbed."""

    method: str
    uri: str
    body: Any  # parsed JSON, or the raw text when the body was not JSON
    status: int
    response: str
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return urlsplit(self.uri).path

    @property
    def role(self) -> Role:
        """Whose session this was: the role the harness marked the request with, else the
        role guessed from its body (a cassette recorded before the marker)."""
        return header_role(self.request_headers) or legacy_role(self.body)

    def to_vcr(self, body_text: str | None = None) -> dict[str, Any]:
        """vcrpy's shape; `body_text` is the body as stored, when it is not the whole body."""
        body = (
            body_text
            if body_text is not None
            else self.body
            if isinstance(self.body, str)
            else _json_text(self.body)
        )
        try:
            reason = HTTPStatus(self.status).phrase
        except ValueError:
            reason = ""
        return {
            "request": {
                "method": self.method,
                "uri": self.uri,
                "body": body,
                "headers": {k: [v] for k, v in self.request_headers.items()},
            },
            "response": {
                "status": {"code": self.status, "message": reason},
                "headers": {k: [v] for k, v in self.response_headers.items()},
                "body": {"string": self.response},
            },
        }

    @classmethod
    def from_vcr(cls, data: Any) -> Interaction:
        """The interaction a vcrpy mapping holds; `Malformed` (saying where) if misshapen."""
        entry = _mapping(data, "the interaction")
        request = _mapping(entry.get("request", _MISSING), "its request")
        response = _mapping(entry.get("response", _MISSING), "its response")
        body = response.get("body")
        return cls(
            method=_text(request.get("method", _MISSING), "request method"),
            uri=_text(request.get("uri", _MISSING), "request uri"),
            body=_body_json(_text(request.get("body"), "request body", empty=True)),
            status=_status(response.get("status", _MISSING)),
            response=""
            if body is None
            else _text(_mapping(body, "response body").get("string"), "response body", empty=True),
            request_headers=_headers(request.get("headers"), "request headers"),
            response_headers=_headers(response.get("headers"), "response headers"),
        )


def _json_text(value: Any) -> str:
    """Indented JSON, one line per reference to a shared block, so a diff reads well."""
    return _REF_LINES.sub(r'{"$shared": \1}', json.dumps(value, indent=2, ensure_ascii=False))


def _ref(value: Any) -> str | None:
    """The block name when `value` is a reference ({"$shared": name}), else None. Refs sit
    only where the Messages API never has a one-key object, so no real body looks like one."""
    if isinstance(value, dict) and len(value) == 1:
        name = value.get(SHARED)
        return name if isinstance(name, str) else None
    return None


class _Packer:
    """Builds the shared blocks and the bodies that refer to them, for one save."""

    def __init__(self, bodies: list[Any]) -> None:
        self.used: dict[str, Any] = {}  # name -> value, in first-use order: the blocks written
        self._texts: dict[str, str] = {}  # name -> compact JSON, to tell a clash of names
        self._names: dict[tuple[str, int], str] = {}  # loaded bodies share objects: hash once
        counts: dict[str, int] = {}
        for body in bodies:
            for name in {self._name("message", m) for m in _messages(body)}:
                counts[name] = counts.get(name, 0) + 1
        self._repeated = {name for name, count in counts.items() if count > 1}

    def _name(self, kind: str, value: Any) -> str:
        known = self._names.get((kind, id(value)))
        if known is not None:
            return known
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        digest = digest_module.hex_of(text.encode())
        name = f"{kind}-{digest[:12]}"
        if self._texts.setdefault(name, text) != text:  # a clash of short names: never seen
            name = f"{kind}-{digest}"
        self._names[(kind, id(value))] = name
        return name

    def _share(self, kind: str, value: Any) -> dict[str, str]:
        name = self._name(kind, value)
        self.used.setdefault(name, value)
        return {SHARED: name}

    def pack(self, body: Any) -> Any:
        """`body` with its system, tools and repeated messages replaced by references."""
        if not isinstance(body, dict):
            return body
        packed = dict(body)
        for key in _SHARED_FIELDS:
            if packed.get(key):
                packed[key] = self._share(key, packed[key])
        if _messages(body):
            packed["messages"] = [
                self._share("message", m) if self._name("message", m) in self._repeated else m
                for m in body["messages"]
            ]
        return packed


def _messages(body: Any) -> list[Any]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return messages if isinstance(messages, list) else []


class _Resolver:
    """Turns references back into the shared objects, each block parsed once."""

    def __init__(self, path: Path, blocks: Any, fix: str) -> None:
        if not isinstance(blocks, dict) or not all(isinstance(v, str) for v in blocks.values()):
            raise CassetteError(
                f"cassette {path} has malformed 'metadata.shared:' (expected name: JSON text "
                f"pairs); {fix}"
            )
        self.path, self.blocks = path, blocks
        self.parsed: dict[str, Any] = {}

    def _get(self, name: str) -> Any:
        if name not in self.parsed:
            text = self.blocks.get(name)
            if text is None:
                raise Malformed(
                    f"its body refers to shared block '{name}', which 'metadata.shared:' "
                    "does not hold"
                )
            try:
                self.parsed[name] = json.loads(text)
            except (ValueError, RecursionError):
                raise Malformed(f"shared block '{name}' is not JSON") from None
        return self.parsed[name]

    def resolve(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        for key in _SHARED_FIELDS:
            name = _ref(body.get(key))
            if name is not None:
                body[key] = self._get(name)
        parsed = self.parsed
        messages = _messages(body)
        for index, message in enumerate(messages):  # inlined _ref: ~20 per request
            if message.__class__ is dict and len(message) == 1:
                name = message.get(SHARED)
                if name.__class__ is str:
                    messages[index] = parsed[name] if name in parsed else self._get(name)


def _format(path: Path, metadata: dict[str, Any], fix: str) -> int:
    version = metadata.pop("format", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CassetteError(f"cassette {path} has malformed 'metadata.format: {version!r}'; {fix}")
    if version > FORMAT:
        raise CassetteError(
            f"cassette {path} is in cassette format {version}, written by a newer pytest-atom; "
            f"this one reads formats 1 to {FORMAT}. Upgrade pytest-atom "
            "(pip install -U pytest-atom) to replay it."
        )
    return version


#: The first line of every cassette pytest-atom writes; such a file always ends in vcrpy's
#: `version:` key, so one without it was cut short.
HEADER = "# pytest-atom cassette (vcrpy format); review it like code, re-record to change it.\n"
_CASSETTE_START = re.compile(r"^(metadata|interactions):", re.MULTILINE)
_VERSION_LINE = re.compile(r"^version:", re.MULTILINE)
_SPEC_LINE = re.compile(r"^  spec: '?([^'\n]+)'?$", re.MULTILINE)


@dataclass
class Loaded:
    """What `Cassette.read` found: the cassette, a blank interaction in the place of each
    malformed one (so interactions keep their numbers), and what is wrong with those."""

    cassette: Cassette
    malformed: dict[int, str]  # interaction number (from 1): what is wrong with it
    fix: str  # what to do about it: restore the file, or the command that records it again
    text: str  # the file's text


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CassetteError(
            f"cassette {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}): "
            "something rewrote it in another encoding, or it is no cassette; "
            f"{_fix(path, None, data[: exc.start].decode('utf-8', 'replace'))}"
        ) from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{problem} on line {mark.line + 1}" if mark is not None else problem


def recorded_spec(path: Path, metadata: Any, text: str = "") -> str:
    """The spec a cassette was recorded for, as a command names it (`file::name`), when the
    default layout puts the file its metadata names up there; else `SPEC`."""
    recorded = metadata.get("spec") if isinstance(metadata, Mapping) else None
    if not isinstance(recorded, str):
        found = _SPEC_LINE.search(text)  # metadata that did not parse: its line, if any
        recorded = found.group(1) if found else ""
    file, _, name = recorded.partition("::")
    # cassettes/<spec file>/<name>.yaml, or a case's cassettes/<spec file>/<spec>/<id>.yaml
    for up in path.parents[1:3] if file else ():
        if up.name == "cassettes" and (up.parent / file).is_file():
            return display_path(up.parent / file) + (f"::{name}" if name else "")
    return "SPEC"


def _fix(path: Path, metadata: Any, text: str) -> str:
    spec = recorded_spec(path, metadata, text)
    spec = spec if spec == "SPEC" else f"'{spec}'"
    return (
        "restore it from version control, or record it again: "
        f"pytest --atom {spec} --atom-record-mode=all"
    )


def _cut_short(text: str, data: Any, where: str, *, problem: bool = True) -> str | None:
    """How the file was cut short: it starts as a cassette, but vcrpy's closing `version:`
    key is missing and (unless pytest-atom wrote it) something else is wrong too."""
    closed = "version" in data if isinstance(data, dict) else bool(_VERSION_LINE.search(text))
    ours = text.startswith(HEADER)
    if closed or not (ours or _CASSETTE_START.search(text)) or not (problem or ours):
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    return (
        f"it stops at line {lines} without vcrpy's closing 'version:' key ({where}): "
        "a write was cut off, or the file was cut"
    )


def _interactions(
    raw: list[Any], resolver: _Resolver | None
) -> tuple[list[Interaction], dict[int, str]]:
    """Each vcrpy interaction read, a blank one in place of each that is malformed."""
    interactions: list[Interaction] = []
    malformed: dict[int, str] = {}
    for number, entry in enumerate(raw, 1):
        try:
            interaction = Interaction.from_vcr(entry)
            if resolver is not None:
                resolver.resolve(interaction.body)
        except Malformed as exc:
            malformed[number] = str(exc)
            interaction = Interaction("", "", "", 0, "")
        interactions.append(interaction)
    return interactions, malformed


@dataclass
class Cassette:
    """One cassette file: its interactions, in recorded order, and its metadata."""

    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # without `format` and `shared`
    format: int = FORMAT  # the format the file was read in; saving always writes FORMAT

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """The cassette at `path`; CassetteError, naming the file, the interaction and the
        command that records it again, for anything that is not a whole cassette."""
        loaded = cls.read(path)
        if loaded.malformed:
            (number, what), *more = loaded.malformed.items()
            others = f" and {plural(len(more), 'other')}" if more else ""
            raise CassetteError(
                f"cassette {path} has a malformed interaction (interaction {number}{others}): "
                f"{what}; {loaded.fix}"
            )
        return loaded.cassette

    @classmethod
    def read(cls, path: Path) -> Loaded:
        """The cassette at `path`, its malformed interactions named instead of refused (for
        `atom cassette check`); CassetteError for a file that is no cassette or is cut short."""
        text = _read_text(path)
        try:
            data = fastyaml.load(text)
        except yaml.YAMLError as exc:
            cut = _cut_short(text, None, f"the YAML breaks off: {_yaml_problem(exc)}")
            what = f": it is truncated, {cut}" if cut else f" ({exc})"
            raise CassetteError(
                f"cassette {path} is not valid YAML{what}; {_fix(path, None, text)}"
            ) from None
        except RecursionError:
            raise CassetteError(f"cassette {path} is nested too deeply to be read") from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            cut = _cut_short(text, data, "it has no 'interactions:' list")
            fix = _fix(path, data.get("metadata") if isinstance(data, dict) else None, text)
            if cut is not None:
                raise CassetteError(f"cassette {path} is truncated, {cut}; {fix}")
            raise CassetteError(f"{path} is not a cassette (no 'interactions:' list); {fix}")
        metadata = data.get("metadata") or {}
        fix = _fix(path, metadata, text)
        if not isinstance(metadata, dict):
            raise CassetteError(
                f"cassette {path} has malformed 'metadata:' ({kind_of(metadata)}); {fix}"
            )
        version = _format(path, metadata, fix)
        shared = metadata.pop("shared", None) or {}
        resolver = _Resolver(path, shared, fix) if version >= 2 else None
        interactions, malformed = _interactions(data["interactions"], resolver)
        last = len(interactions)
        cut = _cut_short(
            text,
            data,
            f"a malformed interaction ends it, number {last}: {malformed[last]}"
            if last in malformed
            else f"it ends after interaction {last}",
            problem=last in malformed,
        )
        if cut is not None:
            raise CassetteError(f"cassette {path} is truncated, {cut}; {fix}")
        return Loaded(cls(path, interactions, metadata, version), malformed, fix, text)

    def dumps(self, format: int = FORMAT) -> str:
        """The file's text; `format=1` writes the first release's layout (for benchmarks)."""
        if format not in (1, FORMAT):
            raise ValueError(f"cannot write cassette format {format}")
        metadata = dict(self.metadata)
        if format == 1:
            interactions = [i.to_vcr() for i in self.interactions]
        else:
            packer = _Packer([i.body for i in self.interactions])
            interactions = [
                i.to_vcr(None if isinstance(i.body, str) else _json_text(packer.pack(i.body)))
                for i in self.interactions
            ]
            shared = {name: _json_text(value) for name, value in packer.used.items()}
            recall = {RECALL: metadata.pop(RECALL)} if RECALL in metadata else {}
            metadata = {
                "format": FORMAT,
                **metadata,
                **recall,
                **({"shared": shared} if shared else {}),
            }
        data = {"metadata": metadata, "interactions": interactions, "version": VCR_VERSION}
        return HEADER + yamldoc.dump(data, fast=True)

    def save(self, path: Path | None = None) -> Path:
        """Write atomically: a crash mid-write leaves the previous file byte-identical."""
        return write_atomic(path or self.path, self.dumps())

    @property
    def partial_path(self) -> Path:
        """Where an interrupted recording is kept, beside the cassette it did not replace."""
        return self.path.with_name(self.path.name.removesuffix(".yaml") + ".partial.yaml")
