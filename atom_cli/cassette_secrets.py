"""The Scrubber `atom cassette check` reads a cassette with: one that knows the secrets of the
spec it was recorded for, as the recording's own did.

A recording scrubs the values of its spec's `env:` and `pass_env:` and of the project's
`.env*` files (`cassettes.scrub.spec_secrets`); a cassette that holds one anyway (recorded
before, or edited since) must fail the check. Those values are in no cassette, so the check
loads the spec its metadata names (``spec: <file>::<name>``), from the cassette's folder or
one above it (the default layout puts the spec three folders up).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pytest_atom.cassettes.cassette import Cassette
from pytest_atom.cassettes.scrub import Scrubber, env_file_secrets, spec_secrets
from pytest_atom.model.project import project_root
from pytest_atom.model.spec_types import Spec

__all__ = ["scrubber_for"]

#: How many folders above a cassette its spec file is looked for.
_LEVELS = 4


def scrubber_for(path: Path, data: Cassette) -> Scrubber:
    """A Scrubber that knows the secrets of the spec `data` was recorded for (a default one
    when that spec cannot be found or loaded: the check still finds everything else)."""
    recorded = str(data.metadata.get("spec") or "")
    file_name, _, name = recorded.partition("::")
    if not file_name or "/" in file_name or "\\" in file_name:
        return _scrubber(None, "")
    for folder in list(path.resolve().parents)[:_LEVELS]:
        candidate = folder / file_name
        if candidate.is_file():
            return _scrubber(candidate, name)
    return _scrubber(None, "")


@lru_cache(maxsize=64)
def _scrubber(spec_file: Path | None, name: str) -> Scrubber:
    spec = _spec(spec_file, name) if spec_file is not None else None
    if spec is None:
        return Scrubber()
    known: dict[str, str] = {}
    for folder in (project_root(spec.root), spec.root, spec.workspace):
        if folder is not None:
            known.update(env_file_secrets(folder))
    known.update(spec_secrets(spec))
    return Scrubber(extra=known)


def _spec(spec_file: Path, name: str) -> Spec | None:
    """The spec `name` (an arm's full name too) of `spec_file`; None when it cannot be
    loaded (the project's check kinds are tried too) or has no such spec."""
    from pytest_atom.model.spec import load_specs
    from pytest_atom.model.spec_types import SpecError

    try:
        try:
            specs = load_specs(spec_file)
        except SpecError:
            from atom_cli.run_cmd import collect_specs
            from pytest_atom.run.harness import host_harness

            harness = host_harness({}, spec_dirs={spec_file.parent})
            specs = collect_specs([spec_file], harness.registry())
    except Exception:  # noqa: BLE001 - a spec that does not load only costs its secrets
        return None
    return next((s for s in specs if name in (s.name, s.base_name)), None)
