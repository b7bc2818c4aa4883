"""What `atom cassette check` finds in one cassette: findings that fail the check (a secret,
a raw path of the recording machine, a request recorded without pytest-atom's placeholders)
and notes a replay copes with (a machine detail masked only on load, hashes it lacks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pytest_atom.gateway.messages import parse_sse
from pytest_atom.replay.cassette import (
    FAULT_HEADER,
    Cassette,
    Interaction,
    Loaded,
    recorded_spec,
)
from pytest_atom.replay.normalize import unmasked_machine_details
from pytest_atom.replay.placeholders import (
    MachinePaths,
    assistant_texts,
    model_written,
    non_assistant_text,
)
from pytest_atom.replay.scrub import SECRET_HEADERS, Scrubber
from pytest_atom.replay.staleness import missing_hashes
from pytest_atom.replay.transcript import is_messages
from pytest_atom.words import plural

#: At least one of these is in every request body pytest-atom recorded from the CLI.
NORMALIZATION_PLACEHOLDERS = ("<DATE>", "<RUN_DIR>", "<METADATA>")


def _secret_findings(scrubber: Scrubber, text: str, where: str, seen: set[str]) -> list[str]:
    """Secrets in ``text`` by name, never by value; their names are added to ``seen``."""
    names = scrubber.contains_secret(text)
    seen.update(names)
    return [f"secret ({_secret_kind(name)}) in {where}" for name in names]


def _secret_kind(name: str) -> str:
    return "REDACTED shape" if name == "REDACTED" else f"value of ${name}"


def _path_findings(
    paths: MachinePaths, text: str, where: str, *, by_model: bool = False
) -> list[str]:
    found = paths.in_text(text, by_model=by_model)
    if not found:
        return []
    listed = ", ".join(found[:3]) + (f" (+{len(found) - 3} more)" if len(found) > 3 else "")
    return [f"raw path in {where}, normalization did not happen: {listed}"]


def _interaction_findings(
    scrubber: Scrubber, interaction: Interaction, seen: set[str], paths: MachinePaths
) -> list[str]:
    body = interaction.body
    body_text = body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False)
    out: list[str] = []
    for side, headers in (
        ("request", interaction.request_headers),
        ("response", interaction.response_headers),
    ):
        out += [
            f"secret header {k.lower()} in {side}" for k in headers if k.lower() in SECRET_HEADERS
        ]
    for where, text in (
        ("request uri", interaction.uri),
        ("request body", body_text),
        ("request headers", "\n".join(interaction.request_headers.values())),
        ("response body", interaction.response),
        ("response headers", "\n".join(interaction.response_headers.values())),
    ):
        out += _secret_findings(scrubber, text, where, seen)
        if where == "request body":
            # What the model wrote earlier is resent in the assistant messages: its paths
            # are the conversation, unless they name this machine's run folder.
            out += _path_findings(paths, non_assistant_text(body), where)
            out += _path_findings(paths, "\n".join(assistant_texts(body)), where, by_model=True)
        else:
            out += _path_findings(paths, text, where, by_model=where == "response body")
    if (
        is_messages(interaction)
        and isinstance(body, dict)
        and ("system" in body or "messages" in body)
        and not any(p in body_text for p in NORMALIZATION_PLACEHOLDERS)
    ):
        out.append(
            "request not normalized (recorded by something other than pytest-atom?): "
            f"its body has none of {', '.join(NORMALIZATION_PLACEHOLDERS)}"
        )
    return out


def file_findings(scrubber: Scrubber, text: str, data: Cassette) -> Iterator[str]:
    """Findings as `interaction <n>: <what>`, or a bare `<what>` outside the interactions."""
    seen: set[str] = set()
    paths = MachinePaths(_model_written(data))
    meta_text = json.dumps(data.metadata, ensure_ascii=False, default=str)
    yield from _secret_findings(scrubber, meta_text, "metadata", seen)
    for n, interaction in enumerate(data.interactions, 1):
        for what in _interaction_findings(scrubber, interaction, seen, paths):
            yield f"interaction {n}: {what}"
        if cut := _cut_answer(interaction):
            yield f"interaction {n}: {cut}; {_record_again(data)}"
    # The whole text, for what the parsed view does not show (a YAML comment, say).
    for name in scrubber.contains_secret(text):
        if name not in seen:
            yield f"secret ({_secret_kind(name)}) in the file text, outside the interactions"


def malformed_findings(loaded: Loaded) -> Iterator[str]:
    """Each interaction whose values are not of the types vcrpy's format has (a header that
    is a number, a body that is a list, a key left out): a replay refuses the cassette."""
    for n, what in loaded.malformed.items():
        yield f"interaction {n}: malformed, {what}; a replay refuses it: {loaded.fix}"


def _cut_answer(interaction: Interaction) -> str | None:
    """What is wrong with a streamed answer that ends before `message_stop`, unless the
    recording marked it as a fault it kept on purpose (a stream the upstream broke off, which
    a replay must break off the same way): a replay would serve it as if it were whole."""
    if FAULT_HEADER in interaction.response_headers:
        return None
    content_type = interaction.response_headers.get("content-type", "")
    if "text/event-stream" not in content_type and not interaction.response.startswith("event:"):
        return None
    names = [name for name, _ in parse_sse(interaction.response)]
    if "message_stop" in names:
        return None
    last = f"its last event is {names[-1]}" if names else "it holds no event"
    return (
        f"answer cut before message_stop ({last}), not marked as a recorded fault "
        f"({FAULT_HEADER}): a replay would serve it as a whole answer"
    )


def _record_again(data: Cassette) -> str:
    spec = recorded_spec(data.path, data.metadata)
    return f"record it again: pytest --atom {spec if spec == 'SPEC' else repr(spec)} --atom-record-mode=all"


def _model_written(data: Cassette) -> frozenset[str]:
    """Every path the model wrote: its answers, and its earlier turns the requests resend."""
    texts = [i.response for i in data.interactions]
    texts += [t for i in data.interactions for t in assistant_texts(i.body)]
    return model_written(texts)


def file_notes(path: Path, data: Cassette) -> Iterator[str]:
    """What a replay copes with but the cassette should not keep: machine details recorded
    before pytest-atom masked them (masked again on every load), and missing hashes."""
    details: dict[str, str] = {}
    where = 0
    for interaction in data.interactions:
        body = interaction.body
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        found = unmasked_machine_details(text)
        where += bool(found)
        for name, value in found:
            details.setdefault(name, value)
    spec = _recorded_spec(path, data)
    if details:
        listed = "; ".join(f"{name}: {value}" for name, value in details.items())
        yield (
            f"note: machine details left unmasked in {plural(where, 'interaction')} ({listed}); "
            "a replay masks them on load, and `atom cassette refresh "
            f"{spec}` rewrites the cassette with them masked"
        )
    missing = missing_hashes(data)
    if missing:
        yield (
            f"note: its staleness cannot be detected: no {' or '.join(missing)} in its metadata "
            "(recorded before pytest-atom stored them), so an edited prompt or script replays "
            f"the old answers unnoticed; stamp it with: atom cassette stamp {spec}"
        )


def _recorded_spec(path: Path, data: Cassette) -> str:
    """The spec file a cassette was recorded for, as a command names it, else `SPEC`."""
    return recorded_spec(path, data.metadata).partition("::")[0]
