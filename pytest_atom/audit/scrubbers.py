"""The Scrubber `atom cassette check` reads a cassette with: one that knows the secrets of the
spec it was recorded for, as the recording's own did.

A recording scrubs the values of its spec's `env:` and `pass_env:` and of the project's
`.env*` files; a cassette that holds one anyway must fail the check. Those values are in no
cassette, so the check loads the spec its metadata names, from the cassette's folder or one
above it.
"""

from __future__ import annotations

from pathlib import Path

from pytest_atom.errors import SpecError
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.scrub import Scrubber, env_file_secrets, spec_secrets
from pytest_atom.settings.project import project_root
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_files, load_specs

#: How many folders above a cassette its spec file is looked for.
_LEVELS = 4


class CheckScrubbers:
    """The Scrubbers of one `atom cassette check`: one per spec the cassettes were recorded
    for, and one shared by those whose spec is not found, kept for the rest of the check."""

    def __init__(self) -> None:
        self._shared = Scrubber()
        self._made: dict[tuple[Path | None, str], Scrubber] = {}

    def for_cassette(self, path: Path, data: Cassette) -> Scrubber:
        """A Scrubber that knows the secrets of the spec `data` was recorded for (the shared
        one when that spec cannot be found or loaded: the check still finds all else)."""
        key = file, name = _spec_file(path, data)
        if key not in self._made:
            spec = _spec(file, name) if file is not None else None
            self._made[key] = _knowing(spec) if spec is not None else self._shared
        return self._made[key]


def _spec_file(path: Path, data: Cassette) -> tuple[Path | None, str]:
    """The spec file (None: not found) and spec name the metadata of `data` names."""
    recorded = str(data.metadata.get("spec") or "")
    file_name, _, name = recorded.partition("::")
    if not file_name or "/" in file_name or "\\" in file_name:
        return None, ""
    for folder in list(path.resolve().parents)[:_LEVELS]:
        if (folder / file_name).is_file():
            return folder / file_name, name
    return None, ""


def _knowing(spec: Spec) -> Scrubber:
    """A Scrubber that also knows `spec`'s secrets and its project's env files', as its run did."""
    from pytest_atom.settings.config import load_config

    try:
        spec = spec.with_limits(load_config(cwd=spec.root))
    except Exception:  # noqa: BLE001 - a broken config only costs its pass_env: names
        pass
    known: dict[str, str] = {}
    for folder in (project_root(spec.root), spec.root, spec.workspace):
        if folder is not None:
            known.update(env_file_secrets(folder))
    known.update(spec_secrets(spec))
    return Scrubber(extra=known)


def _spec(spec_file: Path, name: str) -> Spec | None:
    """The spec `name` (an arm's too) of `spec_file`; None when it cannot be loaded."""
    try:
        specs = load_project_specs(spec_file)
    except Exception:  # noqa: BLE001 - a spec that does not load only costs its secrets
        return None
    return next((s for s in specs if name in (s.name, s.base_name)), None)


def load_project_specs(file: Path) -> list[Spec]:
    """The specs of one file, with the project's check kinds when plain loading refuses one."""
    try:
        return load_specs(file)
    except SpecError:
        from pytest_atom.run.harness import host_harness

        harness = host_harness({}, spec_dirs={file.parent})
        return load_files([file], harness.registry().kinds())
