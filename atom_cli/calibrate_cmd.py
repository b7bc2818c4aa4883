"""`atom calibrate [SPECS]`: how far each criterion's judge agrees with the labelled samples."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from atom_cli.common import (
    ContentError,
    cases_of,
    click_type,
    config_option,
    harness_for,
    load_named,
)
from pytest_atom.agents.claude_code.cli import claude_version, find_claude
from pytest_atom.calibration.calibrate import calibrate_spec, staleness
from pytest_atom.calibration.report import as_json, text_lines
from pytest_atom.calibration.samples import load_samples, samples_dir
from pytest_atom.errors import CalibrationError, HarnessError
from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import remember_spec_secrets
from pytest_atom.settings.options import BY_NAME


@click.command("calibrate")
@click.argument("specs", nargs=-1)
@click.option(
    "--arms", is_flag=True, help="also judge with each arm of calibration/<spec>/arms.yaml, paired."
)
@click.option(
    "--check",
    is_flag=True,
    help="judge nothing: say which calibrations are missing or stale (exit 1).",
)
@click.option("--json", "as_json_", is_flag=True, help="print the results as JSON, for scripts.")
@click.option(
    "--record-mode",
    "record_mode",
    type=click_type(BY_NAME["record_mode"]),
    default=None,
    help="as for `atom run`: none replays the calibration cassette (or plays the script).",
)
@click.option(
    "--upstream", default=None, help="as for `atom run`: where a recording's requests go."
)
@config_option
def calibrate(
    specs: tuple[str, ...],
    arms: bool,
    check: bool,
    as_json_: bool,
    record_mode: str | None,
    upstream: str | None,
    config_path: Path | None,
) -> None:
    """Run the reflector on every labelled sample of SPECS (default: the specs here) and
    report, per criterion: samples, agreement, Cohen's kappa with its 95 % interval, the
    confusion matrix and each disagreement. The result is stored in
    calibration/<spec>/calibration.json with the judge's identity; the reflector's sessions
    are recorded into calibration/<spec>/cassette.yaml, so it replays offline.

    Exit status: 0 when done, 1 with --check when a calibration is missing or stale,
    2 for usage or harness errors.
    """
    targets = list(specs) or ["."]
    options: dict[str, Any] = {"record_mode": record_mode, "upstream": upstream}
    harness = harness_for(options, config_path, targets)
    chosen = [s for s in load_named(targets, harness) if s.criteria]
    claude_bin = find_claude()
    if check:
        sys.exit(_check(chosen, claude_version(claude_bin), harness.config, as_json_))
    results = []
    for spec in chosen:
        if not load_samples(spec):
            if not as_json_:
                click.echo(
                    f"{display_path(spec.path)}::{spec.name}: no samples in "
                    f"{display_path(samples_dir(spec))} (label some with `atom label`)"
                )
            continue
        remember_spec_secrets(spec, harness.root)
        try:
            result = calibrate_spec(
                spec,
                settings=harness.settings,
                config=harness.config,
                claude_bin=claude_bin,
                arms=arms,
                cases=cases_of(spec, harness),
            )
        except (CalibrationError, HarnessError) as err:
            raise ContentError(inert(str(err))) from None
        results.append(result)
        if not as_json_:
            for line in text_lines(result):
                click.echo(inert(line))
    if as_json_:
        click.echo(json.dumps([as_json(r) for r in results], indent=2, ensure_ascii=False))


def _check(chosen: list[Any], version: str, config: Any, as_json_: bool) -> int:
    """Each spec's missing or stale calibrations; 1 when there is any."""
    found = {f"{display_path(s.path)}::{s.name}": staleness(s, version, config) for s in chosen}
    if as_json_:
        click.echo(json.dumps(found, indent=2, ensure_ascii=False))
    else:
        for name, stale in found.items():
            if not stale:
                click.echo(f"{name}: calibrated, and the judge is the same")
            for text, why in stale.items():
                click.echo(inert(f"{name}: {text!r}: {why}"))
    return 1 if any(found.values()) else 0
