"""Which model answers a spec run (its script, its cassette, or a recorded upstream), and
why its replay diverged.

Record modes mean what they mean in vcrpy and pytest-recording. The default, ``none``,
never lets a request leave the machine: a spec replays its cassette, or plays its
script, or fails with the command that records it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from pytest_atom.agents.claude_code.cli import claude_version
from pytest_atom.agents.claude_code.configuration import config_hashes
from pytest_atom.agents.protocol import agent_kind
from pytest_atom.errors import RecordingError
from pytest_atom.files import write_atomic
from pytest_atom.gateway import (
    Gateway,
    Responder,
    Script,
    ScriptedResponder,
)
from pytest_atom.gateway.scripted import draw_key
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.divergence import Divergence
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.mcp_tape import McpTape, describe_miss
from pytest_atom.replay.normalize import Normalizer, run_dates
from pytest_atom.replay.placeholders import volatile_paths
from pytest_atom.replay.reachable import UpstreamCheck
from pytest_atom.replay.recall import Recall
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.staleness import (
    CASE_CHANGED,
    PROMPT_CHANGED,
    SCRIPT_CHANGED,
    StaleReason,
    case_hash,
    interaction_kind,
    prompt_hash,
    script_hash,
    spec_hash,
    staleness,
    workspace_config,
    workspace_config_changes,
)
from pytest_atom.results.drift import ReplayDivergence
from pytest_atom.results.record import UpstreamFault
from pytest_atom.settings.modes import DEFAULT_MATCH, SourceKind
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.confinement import outside_message, outside_project
from pytest_atom.spec.types import Spec

DEFAULT_UPSTREAM = "https://api.anthropic.com"
#: Credentials the CLI can use when recording; passed through, never written down.
AUTH_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


#: Replays a spec offline from the candidate cassette it is given: None when the replay
#: passed, else why it did not (the run layer builds it: `run.spec_run`).
Prove = Callable[[Path], "str | None"]


def cassette_path(spec: Spec) -> Path:
    """``cassettes/<spec file stem>/<spec name>.yaml`` beside the spec, unless it names one;
    an arm's is ``<spec name>@<arm>.yaml``, a case's ``<spec name>/<case id>.yaml``. A
    default path that a link leads outside the project is refused (`RecordingError`)."""
    if spec.cassette is not None:  # `cassette:` was resolved when the spec loaded
        return spec.cassette
    stem = spec.path.name.removesuffix(SPEC_SUFFIX)
    folder = spec.root
    if spec.case is not None:
        file = f"{spec.case}@{spec.arm}.yaml" if spec.arm else f"{spec.case}.yaml"
        path = folder / "cassettes" / stem / spec.base_name / file
    else:
        file = f"{spec.base_name}@{spec.arm}.yaml" if spec.arm else f"{spec.name}.yaml"
        path = folder / "cassettes" / stem / file
    root = outside_project(path, folder)
    if root is not None:
        raise RecordingError(outside_message(f"the cassette of spec {spec.name!r}", path, root))
    return path


def record_command(spec: Spec, mode: str = "once") -> str:
    """The command that records `spec`'s cassette in `mode`: its run's, or the one the spec
    names (`Spec.record_with`: a calibration's cassette is `atom calibrate`'s)."""
    if spec.record_with is not None:
        return spec.record_with.format(mode=mode)
    return f"pytest --atom '{display_path(spec.path)}::{spec.name}' --atom-record-mode={mode}"


def rejudge_command(spec: Spec) -> str:
    return f"pytest --atom '{display_path(spec.path)}::{spec.name}' --atom-rejudge"


def _refuse_stale_script(spec: Spec, cassette: Cassette, reasons: list[StaleReason]) -> None:
    """Refuse a cassette recorded from another script or Claude Code configuration."""
    changed = [r for r in reasons if r.kind == "config"]
    if changed:
        raise RecordingError(
            f"cassette {display_path(cassette.path)} is stale: {'; '.join(changed)} "
            f"({display_path(spec.path)}, claude:): re-record it with: "
            f"{record_command(spec, 'all')}"
        )
    if any(r.kind == "script" for r in reasons):
        raise RecordingError(
            f"cassette {display_path(cassette.path)} is stale: {SCRIPT_CHANGED} "
            f"({display_path(spec.script or spec.path)}), so its recorded answers are the old "
            f"script's. Re-record it with: {record_command(spec, 'all')}"
        )


_cli_version = lru_cache(maxsize=8)(claude_version)


@dataclass
class ModelSource:
    """What answers the CLI during one run, and what to do with the cassette afterwards."""

    kind: SourceKind
    responder: Responder
    auth: dict[str, str] | None = None
    warnings: list[str] = field(default_factory=list)
    upstream_gateway: Gateway | None = None
    refused: str | None = None  # why a refresh or re-judge left the cassette as it was
    failure: str | None = None  # why a recording the agent got through was not saved
    #: The faults that disturbed a recording whose spec failed: it was kept apart, the
    #: cassette left as it was (`finish`).
    disturbed: list[UpstreamFault] = field(default_factory=list)
    stale_reasons: list[StaleReason] = field(default_factory=list)  # staleness() of a replay
    mcp: McpTape | None = None  # the spec's MCP servers' traffic; None: they run as configured
    #: The spec's cassette file, where `open_run_source` opened it.
    cassette_file: Path | None = None

    def open_mcp(self, spec: Spec, folder: Path) -> None:
        """Record the spec's MCP servers into `folder` when the model traffic is recorded, or
        stand in for them from the cassette when it is replayed (refresh and re-judge too)."""
        tape = self.tape
        if not spec.claude.mcp_servers or tape is None or self.kind == "scripted":
            return
        if self.kind == "record":
            self.mcp = McpTape("record", folder)
            return
        self.mcp = McpTape("replay", folder)
        self.mcp.write_tape(tape.cassette.metadata.get("mcp"), tape.normalizer.paths_in)

    def mcp_misses(self) -> list[str]:
        """The MCP requests a replay's stand-ins found nowhere in the cassette, described."""
        if self.mcp is None or self.mcp.mode != "replay":
            return []
        return list(dict.fromkeys(describe_miss(m) for m in self.mcp.misses()))

    #: The choices a stochastic script played while recording (`Script.picks`): stored in
    #: the cassette, so `script_misfit` compares its answers with those choices' turns.
    script_picks: tuple[int, ...] = ()

    #: Structured sessions a replay takes from the cassette, and the hashes a recording stores.
    recall: Recall = field(default_factory=Recall)

    @property
    def script_error(self) -> str | None:
        """Why the spec's script could not answer, when a script answered this run."""
        upstream = self.upstream_gateway.responder if self.upstream_gateway else None
        for responder in (self.responder, upstream):
            if isinstance(responder, ScriptedResponder) and responder.script_error:
                return responder.script_error
        return None

    @property
    def reenacts_retries(self) -> bool:
        """Whether a replay runs a Claude Code call that failed again, as its recording did:
        only for a cassette whose recording met upstream faults (`upstream_faults`)."""
        noted = self.tape.cassette.metadata.get("upstream_faults") if self.tape else None
        return self.kind == "replay" and bool(noted)

    @property
    def tape(self) -> CassetteResponder | None:
        """The cassette-backed responder (replay or record), for divergences and drift."""
        return self.responder if isinstance(self.responder, CassetteResponder) else None

    def finish(
        self,
        spec: Spec,
        *,
        failed: bool,
        cli_version: str | None,
        passed: bool = True,
        prove: Prove | None = None,
    ) -> Path | None:
        """Save what was recorded: a failed recording never replaces a cassette.

        `failed` is the run's own verdict; an upstream fault no retry made good fails it too.
        A failed recording goes to `<name>.partial.yaml`, and so does one a fault disturbed
        whose spec then failed (`passed`); a passing one that met a fault is replayed
        offline (`prove`) first. A successful one replaces the cassette and its partial."""
        if self.upstream_gateway is not None:
            self.upstream_gateway.stop()
        tape = self.tape
        if self.kind in ("refresh", "rejudge") and tape is not None:
            return self._rewrite(spec, tape, cli_version, failed=failed)
        if self.kind != "record" or tape is None:
            return None
        cassette = tape.cassette
        faults = tape.unrecovered_faults()
        if not passed and not failed and not faults:
            self.disturbed = list(tape.disturbances())
        kept_apart = failed or bool(faults) or bool(self.disturbed)
        if not kept_apart and prove is not None and tape.recorded and tape.disturbances():
            return self._proven(spec, tape, cli_version, prove)
        written = (
            self._save(spec, tape, kept_apart, cli_version, self.script_picks)
            if tape.recorded
            else None
        )
        if not kept_apart:
            cassette.partial_path.unlink(missing_ok=True)
        elif faults and not failed:
            # The agent got through, but the cassette would have a hole where the fault was.
            kept = f"; what was recorded is in {display_path(written)}" if written else ""
            self.failure = (
                f"recording failed: {faults[0].description}, and no retry got past it, so "
                f"{display_path(cassette.path)} was left as it was{kept}. Record it again with: "
                f"{record_command(spec, 'all')}"
            )
        return written

    def _proven(
        self, spec: Spec, tape: CassetteResponder, cli_version: str | None, prove: Prove
    ) -> Path:
        """Replay a recording that met a fault from a temporary cassette before it replaces
        the spec's; one that does not replay goes to the partial, and the run is an error."""
        cassette = tape.cassette
        met = tape.disturbances()
        with tempfile.TemporaryDirectory(prefix="atom-proof-") as folder:
            candidate = self._save(spec, tape, False, cli_version, self.script_picks, Path(folder))
            why = prove(candidate)
            data = candidate.read_bytes()
        if why is None:
            written = write_atomic(cassette.path, data)
            cassette.partial_path.unlink(missing_ok=True)
            return written
        kept = write_atomic(cassette.partial_path, data)
        self.disturbed = list(met)
        self.failure = (
            f"recording failed: {met[0].description}; Claude Code got past it, but the new "
            f"recording could not be replayed offline ({why}), so "
            f"{display_path(cassette.path)} was left as it was; what was recorded is in "
            f"{display_path(kept)}. Record it again with: {record_command(spec, 'all')}"
        )
        return kept

    def _save(
        self,
        spec: Spec,
        tape: CassetteResponder,
        failed: bool,
        cli_version: str | None,
        picks: tuple[int, ...] = (),
        folder: Path | None = None,
    ) -> Path:
        """Write the recording: to the cassette, its partial (`failed`), or under `folder`."""
        cassette = tape.cassette
        notes = tape.fault_notes()  # read by slot: before the cassette keeps only what it keeps
        cassette.interactions = tape.finished_interactions()
        models = [i.body.get("model") for i in cassette.interactions if isinstance(i.body, dict)]
        cassette.metadata = {
            "claude_code_version": cli_version,
            "model": next((m for m in models if m), None),
            "spec": f"{spec.path.name}::{spec.name}",
            "spec_hash": spec_hash(spec),
            "prompt_hash": prompt_hash(spec),
            **({"case_hash": case_hash(spec)} if spec.case is not None else {}),
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "upstream": tape.upstream_label,
        }
        if tape.upstream_label and tape.upstream_label.startswith("scripted://"):
            cassette.metadata["script_hash"] = script_hash(spec)
            if picks:
                cassette.metadata["script_picks"] = list(picks)
        config = config_hashes(spec.claude)
        if config:
            cassette.metadata["config_hashes"] = config  # what `config_staleness` compares
        own = workspace_config(spec)
        if own is not None:
            cassette.metadata["workspace_config"] = own
        if self.mcp is not None:
            # Scrubbed again with the recording's own credentials, which the proxies lacked.
            servers = tape.scrubber.scrub_obj(self.mcp.recorded(tape.normalizer.paths_out))
            if servers:
                cassette.metadata["mcp"] = servers
        if notes:
            cassette.metadata["upstream_faults"] = notes
        self.recall.stamp(cassette.metadata)
        if folder is not None:
            return cassette.save(folder / cassette.path.name)
        return cassette.save(cassette.partial_path if failed else None)

    def _rewrite(
        self, spec: Spec, tape: CassetteResponder, cli_version: str | None, *, failed: bool
    ) -> Path | None:
        """Refresh and re-judge rewrite an existing cassette, atomically, and only after a
        run that diverged nowhere: a divergence is reported instead, the file untouched."""
        diverged = bool(tape.divergences or self.mcp_misses())
        if diverged or failed:
            why = "the replay diverged" if diverged else "the run did not finish"
            self.refused = f"{why}, so {tape.cassette.path.name} was left unchanged"
            return None
        old = tape.cassette
        recorded = old.interactions[: tape.original_count]
        metadata = dict(old.metadata)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        if self.kind == "refresh":
            unplayed = tape.unplayed()
            if unplayed:
                self.refused = (
                    f"the live run never sent {unplayed} recorded turn(s), so the conversation "
                    f"did not replay whole; {old.path.name} was left unchanged"
                )
                return None
            interactions = list(tape.served)
            models = [i.body.get("model") for i in interactions if isinstance(i.body, dict)]
            metadata.update(
                claude_code_version=cli_version,
                model=next((m for m in models if m), metadata.get("model")),
                refreshed_from=old.metadata.get("claude_code_version"),
                refreshed_at=now,
            )
            own = workspace_config(spec)
            if own is not None:
                metadata["workspace_config"] = own
        else:
            judged = tape.finished_interactions()[len(recorded) :]
            if not judged:
                self.refused = "no reflector session ran, so there was nothing to re-judge"
                return None
            agent = [i for i in recorded if interaction_kind(i) != "reflector"]
            interactions = agent + judged
            metadata["rejudged_at"] = now
            if spec.script is not None and "script_hash" in metadata:
                metadata["script_hash"] = script_hash(spec)  # its reflector turns judged anew
        self.recall.stamp(metadata)
        return Cassette(old.path, interactions, metadata).save()


def open_run_source(
    spec: Spec,
    settings: RunSettings,
    run_dir: Path,
    *,
    claude_bin: Path,
    repeat: int | None,
    upstreams: UpstreamCheck | None = None,
) -> ModelSource:
    """The model source of a spec's run in `run_dir`, ready for its gateway: its paths
    masked, its MCP servers recorded or stood in for (``<run>/mcp``), its cassette named."""
    source = open_model_source(
        spec,
        settings,
        paths=volatile_paths(run_dir, spec),
        claude_bin=claude_bin,
        repeat=repeat,
        upstreams=upstreams,
    )
    source.open_mcp(spec, run_dir / "mcp")
    source.cassette_file = cassette_path(spec)
    return source


def open_model_source(
    spec: Spec,
    settings: RunSettings,
    *,
    paths: dict[str, str],
    claude_bin: Path,
    repeat: int | None = None,
    upstreams: UpstreamCheck | None = None,
) -> ModelSource:
    """Decide, per record mode, whether this run plays a script, replays or records."""
    path = cassette_path(spec)
    exists = path.exists()
    mode = settings.record_mode
    if settings.rejudge or mode == "refresh":
        what = "re-judge" if settings.rejudge else "refresh"
        if not exists:
            raise RecordingError(
                f"no cassette to {what} for spec '{spec.name}' (expected {display_path(path)}); "
                f"record it with: {record_command(spec)}"
            )
        if settings.rejudge:
            cassette = Cassette.load(path)
            source = _record(
                spec, settings, cassette, paths, replay=True, kind="rejudge", upstreams=upstreams
            )
            # The agent's side replays: its drift names both versions, as a replay's does.
            _versions(source.responder, cassette, claude_bin)
            return source
        return _replay(spec, settings, path, paths, claude_bin, kind="refresh")
    if mode == "none" or (mode == "once" and exists):
        if exists:
            return _replay(spec, settings, path, paths, claude_bin)
        if spec.script is not None:
            key = script_key(spec, settings, repeat)
            return ModelSource("scripted", ScriptedResponder(Script.load(spec.script), key=key))
        raise RecordingError(
            f"no cassette for spec '{spec.name}' (expected {display_path(path)}); record it with: "
            f"{record_command(spec)}"
        )
    cassette = Cassette.load(path) if exists and mode == "new_episodes" else Cassette(path)
    _refuse_stale_script(spec, cassette, staleness(spec, cassette))
    return _record(
        spec,
        settings,
        cassette,
        paths,
        replay=mode == "new_episodes",
        repeat=repeat,
        upstreams=upstreams,
    )


def script_key(spec: Spec, settings: RunSettings, repeat: int | None) -> str:
    """What draws this run's script choices (`draw_key`): seed, spec, arm and repeat."""
    case = f"[{spec.case}]" if spec.case is not None else ""
    return draw_key(
        settings.seed or 0, f"{spec.path.name}::{spec.base_name}{case}", spec.arm, repeat
    )


def _replay(
    spec: Spec,
    settings: RunSettings,
    path: Path,
    paths: dict[str, str],
    claude_bin: Path,
    kind: SourceKind = "replay",
) -> ModelSource:
    cassette = Cassette.load(path)
    reasons = staleness(spec, cassette)
    _refuse_stale_script(spec, cassette, reasons)
    matcher = matcher_for(settings.match)
    responder = CassetteResponder(
        cassette,
        Normalizer(paths, run_dates()),
        Scrubber(),
        replay=True,
        matcher=matcher,
        owned_system=_owned_system(spec),
    )
    # A refresh must match on the conversation: it exists to absorb what the CLI changed.
    if kind == "refresh" and matcher.exact:
        responder.matcher = matcher_for(DEFAULT_MATCH)
    recorded, live = _versions(responder, cassette, claude_bin)
    responder.drift.workspace_changed = tuple(workspace_config_changes(spec, cassette))
    if recorded and recorded != live and settings.strict_version and kind == "replay":
        raise RecordingError(
            f"cassette {display_path(path)} was recorded with Claude Code {recorded}, this run "
            f"uses {live} (--atom-strict-version); refresh it for this CLI with: "
            f"{record_command(spec, 'refresh')}"
        )
    # Strict matching compares Claude Code's own parts of a request too, which only the
    # same CLI is known to send alike: another version starts the sessions.
    same_requests = not matcher.exact or recorded == live
    enabled = kind == "replay" and settings.judge == "recall" and same_requests
    recall = Recall(responder, enabled=enabled, case=spec.case_vars)
    return ModelSource(kind, responder, stale_reasons=reasons, recall=recall)


def _versions(responder: Responder, cassette: Cassette, claude_bin: Path) -> tuple[str | None, str]:
    """The Claude Code a cassette was recorded with and the one replaying it, for the drift."""
    recorded = cassette.metadata.get("claude_code_version")
    live = _cli_version(claude_bin)
    if isinstance(responder, CassetteResponder):
        responder.drift.recorded_version, responder.drift.live_version = recorded, live
    return recorded, live


def _record(
    spec: Spec,
    settings: RunSettings,
    cassette: Cassette,
    paths: dict[str, str],
    *,
    replay: bool,
    kind: SourceKind = "record",
    repeat: int | None = None,
    upstreams: UpstreamCheck | None = None,
) -> ModelSource:
    auth = {k: os.environ[k] for k in AUTH_VARIABLES if os.environ.get(k)}
    upstream_gateway = None
    picks: tuple[int, ...] = ()
    if settings.upstream:
        upstream, label = settings.upstream, settings.upstream
    elif spec.script is not None:
        scripted = ScriptedResponder(
            Script.load(spec.script), key=script_key(spec, settings, repeat)
        )
        upstream_gateway = Gateway(scripted).start()
        upstream, label = upstream_gateway.url, f"scripted://{spec.script.name}"
        picks = scripted.script.picks
        auth = {}
    else:
        upstream = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
        label = upstream
        if not auth:
            raise RecordingError(
                f"recording spec '{spec.name}' from {upstream} needs credentials: set one of "
                f"{', '.join(AUTH_VARIABLES)} (they are passed to Claude Code, never stored)"
            )
    if upstreams is not None and upstream_gateway is None:  # a script's own is local
        upstreams.require(upstream, spec.name)
    responder = CassetteResponder(
        cassette,
        Normalizer(paths, run_dates()),
        Scrubber(extra=auth),
        replay=replay,
        upstream=upstream,
        upstream_label=label,
        credentials=auth,
        matcher=matcher_for(settings.match),
        # Re-judging replays the agent and asks the upstream for the reflector's verdicts.
        forward_kinds=frozenset({"reflector"}) if kind == "rejudge" else frozenset(),
        owned_system=_owned_system(spec),
    )
    return ModelSource(
        kind,
        responder,
        auth=auth or None,
        upstream_gateway=upstream_gateway,
        script_picks=picks,
        recall=Recall(responder, enabled=False, case=spec.case_vars),
    )


def _owned_system(spec: Spec) -> frozenset[str]:
    """The request kinds whose system prompt is the spec's own: an SDK app's turns."""
    return frozenset({"turn"}) if spec.agent is not None else frozenset()


def divergence_report(
    spec: Spec, source: ModelSource, cli_version: str | None
) -> list[ReplayDivergence]:
    """A replay's divergences, led by their likely cause and the command that fixes it
    (re-record, refresh for another Claude Code, re-judge); the first one in full detail."""
    tape = source.tape
    misses = [ReplayDivergence(miss, "mcp") for miss in source.mcp_misses()]
    if misses:
        # An MCP answer the recording lacks comes first: what the agent did next (and any
        # conversation divergence) follows from the error the stand-in gave in its place.
        head = (
            "likely cause: an MCP server was asked what the recording never saw; re-record it "
            f"with: {record_command(spec, 'all')}"
        )
        misses[0] = ReplayDivergence(misses[0].detail, "mcp", head)
    if tape is None or not tape.divergences:
        return misses
    first, *rest = tape.divergences
    causes = []
    metadata = tape.cassette.metadata
    if first.kind == "reflector" and not any(d.kind == "turn" for d in rest):
        causes.append(
            "the reflector's input changed (checks or criteria): the agent's sessions replayed, "
            f"re-judge them with: {rejudge_command(spec)}"
        )
    elif case := next((r for r in source.stale_reasons if r.startswith(CASE_CHANGED)), None):
        causes.append(f"{case}: re-record it with: {record_command(spec, 'all')}")
    elif any(r.kind == "prompt" for r in source.stale_reasons) or (
        "prompt_hash" not in metadata and metadata.get("spec_hash") not in (None, spec_hash(spec))
    ):
        causes.append(f"{PROMPT_CHANGED}: re-record it with: {record_command(spec, 'all')}")
    causes += _where_causes(spec, first, metadata.get("claude_code_version"), cli_version, causes)
    lead = "likely cause: " + "; ".join(causes) if causes else "cause unknown"
    # Claude Code retries and falls back on a failed request: one divergence, sent again.
    first_text = first.describe(limit=None)
    seen = {first_text}
    report = [ReplayDivergence(first_text, first.kind, lead)]
    for divergence in rest:
        text = divergence.describe()
        if text not in seen and divergence.describe(limit=None) != first_text:
            seen.add(text)
            report.append(ReplayDivergence(text, divergence.kind))
    return misses + report


def _where_causes(
    spec: Spec,
    first: Divergence,
    recorded: str | None,
    live: str | None,
    known: list[str],
) -> list[str]:
    """The cause where the first divergence lies points to. Another Claude Code version is
    blamed only when nothing but Claude Code's own parts of the request differ."""
    where = first.where()
    other_version = bool(recorded and live and recorded != live)
    if where is None or where[0] == "played":
        return []
    kind, labels = where
    if kind == "system" and spec.agent is not None:
        return [
            f"{agent_kind(spec.agent.kind).noun}'s system prompt changed since recording ({spec.agent.value} sets "
            f"it; the conversation is the same): re-record it with: {record_command(spec, 'all')}"
        ]
    if kind == "machine":
        return [
            f"a machine detail differs ({', '.join(labels)}): the cassette was recorded on "
            "another machine, and pytest-atom does not mask this detail yet; the default "
            "--atom-match=conversation ignores it"
        ]
    if kind == "cli":
        if other_version:
            return [
                f"recorded with another Claude Code version ({recorded}; this run {live}), and "
                "strict matching compares Claude Code's own parts of the request too; refresh "
                f"the cassette for this CLI with: {record_command(spec, 'refresh')}"
            ]
        return [
            "Claude Code's own parts of the request differ (its settings or environment), the "
            "conversation does not; the default --atom-match=conversation ignores them"
        ]
    if known:  # the prompt or the reflector's input changed: the conversation says so
        return []
    if kind == "tool_result":
        also = (
            f", or Claude Code {live} words its own part of it unlike {recorded}"
            if other_version
            else ""
        )
        return [
            "a tool result differs from the recording: the workspace or a command's output "
            f"changed since recording{also} (--atom-match=structural ignores tool results)"
        ]
    return ["the conversation differs from the recording (below)"]
