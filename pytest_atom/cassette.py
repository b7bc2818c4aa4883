"""Cassettes: one spec's recorded model traffic, in vcrpy's YAML format.

vcrpy (9.x) loads these files, and so do its tools, but the gateway reads and writes them
itself: vcrpy's httpx stub holds a streamed body back until it is complete, and its
Cassette has no locking. Request bodies are stored as indented JSON and responses as SSE
text, both as YAML block strings, so a cassette diff in a pull request can be read.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
FORMAT_VERSION = 1  # vcrpy's cassette format version


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Multi-line strings as `|` blocks: readable bodies instead of one escaped line."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class CassetteError(Exception):
    """A cassette that cannot be read; the message names the file and what to do."""


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

    def to_vcr(self) -> dict[str, Any]:
        body = (
            self.body
            if isinstance(self.body, str)
            else json.dumps(self.body, indent=2, ensure_ascii=False)
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
    def from_vcr(cls, data: Mapping[str, Any]) -> Interaction:
        request, response = data["request"], data["response"]
        raw = request.get("body") or ""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        return cls(
            method=request["method"],
            uri=request["uri"],
            body=body,
            status=int(response["status"]["code"]),
            response=str((response.get("body") or {}).get("string") or ""),
            request_headers={k: v[0] for k, v in (request.get("headers") or {}).items() if v},
            response_headers={k: v[0] for k, v in (response.get("headers") or {}).items() if v},
        )


@dataclass
class Cassette:
    path: Path
    interactions: list[Interaction] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Cassette:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
        except OSError as exc:
            raise CassetteError(f"cannot read cassette {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise CassetteError(
                f"cassette {path} is not valid YAML ({exc}); record it again"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise CassetteError(
                f"{path} is not a cassette (no 'interactions:' list); record it again"
            )
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CassetteError(f"cassette {path} has malformed 'metadata:'; record it again")
        try:
            interactions = [Interaction.from_vcr(i) for i in data["interactions"]]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise CassetteError(
                f"cassette {path} has a malformed interaction ({exc!r}); record it again"
            ) from None
        return cls(path, interactions, metadata)

    def dumps(self) -> str:
        data = {
            "metadata": self.metadata,
            "interactions": [i.to_vcr() for i in self.interactions],
            "version": FORMAT_VERSION,
        }
        header = (
            "# pytest-atom cassette (vcrpy format); review it like code, re-record to change it.\n"
        )
        return header + yaml.dump(
            data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )

    def save(self, path: Path | None = None) -> Path:
        """Write atomically: a crash mid-write leaves the previous file byte-identical."""
        target = path or self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide it from the team
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(self.dumps())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @property
    def partial_path(self) -> Path:
        """Where an interrupted recording is kept, beside the cassette it did not replace."""
        return self.path.with_name(self.path.name.removesuffix(".yaml") + ".partial.yaml")
