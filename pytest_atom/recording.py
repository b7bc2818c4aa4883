"""Which model answers a spec run: its script, its cassette, or a recorded upstream.

Record modes mean what they mean in vcrpy and pytest-recording. The default, ``none``,
never lets a request leave the machine: a spec replays its cassette, or plays its
script, or fails with the command that records it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from pytest_atom.cassette import Cassette
from pytest_atom.claude_code import claude_version
from pytest_atom.gateway import Gateway, Responder, Script, ScriptedResponder
from pytest_atom.gateway.normalize import Normalizer, run_dates
from pytest_atom.gateway.replay import CassetteResponder
from pytest_atom.paths import display_path
from pytest_atom.scrub import Scrubber
from pytest_atom.spec import SPEC_SUFFIX, Spec

RECORD_MODES = ("none", "once", "new_episodes", "all")
MATCH_MODES = ("strict", "structural")
DEFAULT_UPSTREAM = "https://api.anthropic.com"
#: Credentials the CLI can use when recording; passed through, never written down.
AUTH_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


class RecordingError(Exception):
    """A spec cannot run in the requested record mode; the message says what to run."""


@dataclass(frozen=True)
class RecordSettings:
    mode: str = "none"
    upstream: str | None = None  # None: the spec's script, else $ANTHROPIC_BASE_URL, else Anthropic
    match: str = "strict"
    strict_version: bool = False


def cassette_path(spec: Spec) -> Path:
    """``cassettes/<spec file stem>/<spec name>.yaml`` beside the spec, unless it names one."""
    stem = spec.path.name.removesuffix(SPEC_SUFFIX)
    return spec.cassette or spec.root / "cassettes" / stem / f"{spec.name}.yaml"


def record_command(spec: Spec) -> str:
    return f"pytest --atom '{display_path(spec.path)}::{spec.name}' --atom-record-mode=once"


def spec_hash(spec: Spec) -> str:
    canonical = json.dumps(spec.raw, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()[:16]


@lru_cache(maxsize=8)
def _cli_version(binary: Path) -> str:
    return claude_version(binary)


@dataclass
class ModelSource:
    """What answers the CLI during one run, and what to do with the cassette afterwards."""

    kind: str  # "scripted", "replay" or "record"
    responder: Responder
    auth: dict[str, str] | None = None
    warnings: list[str] = field(default_factory=list)
    upstream_gateway: Gateway | None = None

    @property
    def tape(self) -> CassetteResponder | None:
        """The cassette-backed responder (replay or record), for divergences and drift."""
        return self.responder if isinstance(self.responder, CassetteResponder) else None

    def finish(self, spec: Spec, *, failed: bool, cli_version: str | None) -> Path | None:
        """Save what was recorded: a failed recording never replaces a cassette.

        `failed` is the run's own verdict (a timeout, Ctrl-C, a crash, a CLI that gave up);
        an upstream fault no retry made good fails it too, since the cassette would have a
        hole there. A failed recording goes to `<name>.partial.yaml` beside the cassette;
        a successful one replaces the cassette and removes a stale partial.
        """
        if self.upstream_gateway is not None:
            self.upstream_gateway.stop()
        tape = self.tape
        if self.kind != "record" or tape is None:
            return None
        cassette = tape.cassette
        faults = tape.unrecovered_faults()
        written = (
            self._save(spec, tape, failed or bool(faults), cli_version) if tape.recorded else None
        )
        if not (failed or faults):
            cassette.partial_path.unlink(missing_ok=True)
        elif faults and not failed and written is not None:
            # The agent got through (the runtime retried it), but the cassette would have a
            # hole where the fault was: a passing run must still say it recorded nothing.
            self.warnings.append(
                f"the recording never got past an upstream fault ({faults[0].description}), "
                f"so {display_path(cassette.path)} was left as it was; what was recorded is "
                f"in {display_path(written)}"
            )
        return written

    @staticmethod
    def _save(spec: Spec, tape: CassetteResponder, failed: bool, cli_version: str | None) -> Path:
        cassette = tape.cassette
        cassette.interactions = tape.finished_interactions()
        models = [i.body.get("model") for i in cassette.interactions if isinstance(i.body, dict)]
        cassette.metadata = {
            "claude_code_version": cli_version,
            "model": next((m for m in models if m), None),
            "spec": f"{spec.path.name}::{spec.name}",
            "spec_hash": spec_hash(spec),
            "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "upstream": tape.upstream_label,
        }
        return cassette.save(cassette.partial_path if failed else None)


def open_model_source(
    spec: Spec, settings: RecordSettings, *, paths: dict[str, str], claude_bin: Path
) -> ModelSource:
    """Decide, per record mode, whether this run plays a script, replays or records."""
    path = cassette_path(spec)
    exists = path.exists()
    mode = settings.mode
    if mode == "none" or (mode == "once" and exists):
        if exists:
            return _replay(spec, settings, path, paths, claude_bin)
        if spec.script is not None:
            return ModelSource("scripted", ScriptedResponder(Script.load(spec.script)))
        raise RecordingError(
            f"no cassette for spec '{spec.name}' (expected {display_path(path)}); record it with: "
            f"{record_command(spec)}"
        )
    cassette = Cassette.load(path) if exists and mode == "new_episodes" else Cassette(path)
    return _record(spec, settings, cassette, paths, replay=mode == "new_episodes")


def _normalizer(paths: dict[str, str]) -> Normalizer:
    return Normalizer(paths, run_dates())


def _replay(
    spec: Spec, settings: RecordSettings, path: Path, paths: dict[str, str], claude_bin: Path
) -> ModelSource:
    cassette = Cassette.load(path)
    source = ModelSource(
        "replay",
        CassetteResponder(
            cassette, _normalizer(paths), Scrubber(), replay=True, match=settings.match
        ),
    )
    recorded = cassette.metadata.get("claude_code_version")
    live = _cli_version(claude_bin)
    if recorded and recorded != live:
        problem = (
            f"cassette {display_path(path)} was recorded with Claude Code {recorded}, "
            f"this run uses {live}; re-record it with --atom-record-mode=all"
        )
        if settings.strict_version:
            raise RecordingError(problem)
        source.warnings.append(problem)
    return source


def _record(
    spec: Spec, settings: RecordSettings, cassette: Cassette, paths: dict[str, str], *, replay: bool
) -> ModelSource:
    auth = {k: os.environ[k] for k in AUTH_VARIABLES if os.environ.get(k)}
    upstream_gateway = None
    if settings.upstream:
        upstream, label = settings.upstream, settings.upstream
    elif spec.script is not None:
        # A scripted spec records from its own script: nothing leaves the machine.
        upstream_gateway = Gateway(ScriptedResponder(Script.load(spec.script))).start()
        upstream, label = upstream_gateway.url, f"scripted://{spec.script.name}"
        auth = {}
    else:
        upstream = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
        label = upstream
        if not auth:
            raise RecordingError(
                f"recording spec '{spec.name}' from {upstream} needs credentials: set one of "
                f"{', '.join(AUTH_VARIABLES)} (they are passed to Claude Code, never stored)"
            )
    responder = CassetteResponder(
        cassette,
        _normalizer(paths),
        Scrubber(extra=auth),
        replay=replay,
        upstream=upstream,
        upstream_label=label,
        match=settings.match,
    )
    return ModelSource("record", responder, auth=auth or None, upstream_gateway=upstream_gateway)
