"""`atom cassette stamp`: the prompt and script hashes written into a cassette, where it is
proven to fit its spec as the spec is now (the command's help says what proves it)."""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.paths import display_path
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path, record_command
from pytest_atom.replay.staleness import script_misfit, staleness, stamp_hashes
from pytest_atom.run.harness import Harness
from pytest_atom.spec.types import Spec


@dataclass(frozen=True)
class Stamped:
    """What stamping one spec's cassette did: `fits` is False when none fits."""

    fits: bool
    line: str


def stamp_cassette(spec: Spec, harness: Harness) -> Stamped:
    """Stamp `spec`'s cassette where it is proven to fit; only its metadata changes, written
    atomically. CassetteError: not a cassette; `HARNESS_ERRORS`: the replay could not run."""
    path = cassette_path(spec)
    if not path.exists():
        return Stamped(
            False,
            f"{spec.name}: no cassette (expected {display_path(path)}); record it with: "
            f"{record_command(spec)}",
        )
    data = Cassette.load(path)
    hashes = stamp_hashes(spec, data)
    if all(data.metadata.get(k) == v for k, v in hashes.items()):
        return Stamped(True, f"{spec.name}: already stamped {display_path(path)}")
    why = misfit(spec, data, path, harness)
    if why is not None:
        return Stamped(
            False,
            f"{spec.name}: not stamped, the cassette does not fit the spec: {why}\n"
            f"  re-record it with: {record_command(spec, 'all')}",
        )
    data.metadata.update(hashes)
    data.save()
    stamped = ", ".join(
        f"{k} {v}" if isinstance(v, str) else f"{k} for {', '.join(v)}" for k, v in hashes.items()
    )
    return Stamped(True, f"{spec.name}: stamped {display_path(path)} ({stamped})")


def misfit(spec: Spec, data: Cassette, path: Path, harness: Harness) -> str | None:
    """Why the cassette at `path` does not fit `spec` as it is now; None when it does."""
    why = "; ".join(staleness(spec, data)) or script_misfit(spec, data)
    if why is not None:
        return why
    # The refresh machinery proves a whole replay, on a copy it may rewrite freely.
    with tempfile.TemporaryDirectory(prefix="atom-stamp-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_bytes(path.read_bytes())
        result = harness.run(dataclasses.replace(spec, cassette=copy))
    if result.cassette is None:
        return f"{result.harness_error or 'the replay failed'}\n{result.report()}"
    return None
