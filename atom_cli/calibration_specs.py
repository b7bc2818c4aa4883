"""What `atom label` and `atom calibrate` share: the harness of the project they run in,
and the specs they name (a spec file, ``file::name``, or folders of them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from atom_cli.run_cmd import ContentError
from pytest_atom.calibration.record import base_name
from pytest_atom.errors import SettingsError, SpecError
from pytest_atom.paths import SPEC_SUFFIX
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.spec.load import load_files, spec_files
from pytest_atom.spec.types import Spec


def harness_for(
    options: dict[str, Any], config_path: Path | None, files: Sequence[Path]
) -> Harness:
    """The harness as `atom run` builds it: these options over the ini file and
    `.atom/config.yaml`, and the project's conftests (their check kinds)."""
    try:
        return host_harness(
            options, config_path=config_path, spec_dirs={file.parent for file in files}
        )
    except SettingsError as err:
        raise ContentError(str(err)) from None


def split_target(target: str) -> tuple[Path, str | None]:
    """``path`` or ``path::name``: the spec file (or folder) and the spec's name."""
    path, _, name = target.partition("::")
    return Path(path), name or None


def load_named(targets: Sequence[str], harness: Harness | None = None) -> list[Spec]:
    """The specs `targets` name, one per spec name (its cases and arms share one judge, so
    one calibration: the first of them stands for all; `cases_of` gives each case)."""
    return [specs[0] for specs in load_grouped(targets, harness).values()]


def cases_of(spec: Spec, harness: Harness | None = None) -> dict[str, Spec]:
    """Every case of `spec` (of the spec file's spec with its name) by case id, the
    reference arm's or the first; {} for a spec without cases."""
    if spec.case is None:
        return {}
    (group,) = load_grouped([f"{spec.path}::{base_name(spec)}"], harness).values()
    found: dict[str, Spec] = {}
    for case in group:
        if case.case is not None and (case.case not in found or case.arm_reference):
            found[case.case] = case
    return found


def load_grouped(
    targets: Sequence[str], harness: Harness | None = None
) -> dict[tuple[Path, str], list[Spec]]:
    """The specs `targets` name, grouped by spec file and name: each spec's cases and arms."""
    found: dict[tuple[Path, str], list[Spec]] = {}
    for target in targets:
        path, name = split_target(target)
        if not path.exists():
            raise click.BadParameter(f"no such file or folder: {path}", param_hint="SPEC")
        files = spec_files([path])
        kinds = harness.registry().kinds() if harness else ()
        try:
            specs = load_files(files, kinds)
        except SpecError as err:
            raise ContentError(str(err)) from None
        for spec in specs:
            if name is None or base_name(spec) == name or spec.name == name:
                group = found.setdefault((spec.path, base_name(spec)), [])
                if all(other.name != spec.name for other in group):
                    group.append(spec)
        if name is not None and not any(base_name(s) == name or s.name == name for s in specs):
            names = ", ".join(sorted({base_name(s) for s in specs})) or "none"
            raise click.BadParameter(
                f"no spec {name!r} in {path} (it has: {names})", param_hint="SPEC"
            )
        if not specs:
            raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {path}")
    return found
