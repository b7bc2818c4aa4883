"""`atom label RUN SPEC --pass|--fail`: a labelled sample, taken from a run, for calibration."""

from __future__ import annotations

from pathlib import Path

import click

from atom_cli.common import (
    ContentError,
    cases_of,
    config_option,
    harness_for,
    load_named,
    split_target,
)
from pytest_atom.calibration.samples import write_sample
from pytest_atom.calibration.taking import label, take_sample
from pytest_atom.errors import CalibrationError, HistoryError
from pytest_atom.history.store import NoStore, session_store
from pytest_atom.inert import inert
from pytest_atom.judge.calibration import base_name
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber, remember_spec_secrets
from pytest_atom.rescore import find_run, run_case


@click.command("label")
@click.argument("run")
@click.argument("spec")
@click.option(
    "--pass/--fail", "met", default=None, help="the human's verdict: the criterion is met, or not."
)
@click.option(
    "--criterion",
    type=click.IntRange(min=1),
    default=None,
    help="which criterion (1 is the first); default: every criterion of the spec.",
)
@click.option(
    "--note", default="", help="why: shown beside the judge's reasons when they disagree."
)
@config_option
def label_(
    run: str,
    spec: str,
    met: bool | None,
    criterion: int | None,
    note: str,
    config_path: Path | None,
) -> None:
    """Label one attempt for calibrating SPEC's judge: RUN is a run folder
    (.atom/runs/...) or a run of the history store (its id, or a unique prefix).

    The sample (the attempt's change, final message, transcript and check results, with
    your verdict and note) is written to calibration/<spec>/samples/ beside the spec file,
    secrets scrubbed. Labelling the same run again adds or replaces a criterion's label.
    A dataset spec's sample keeps the case its run ran, and is labelled against that
    case's criteria; a stored run of several cases needs the case: FILE::NAME[CASE].
    """
    if met is None:
        raise click.UsageError("give the verdict: --pass (the criterion is met) or --fail")
    harness = harness_for({}, config_path, [spec])
    (chosen, *others) = load_named([spec], harness)
    if others:
        names = ", ".join(s.name for s in [chosen, *others])
        raise click.UsageError(f"{spec} holds several specs ({names}): name one as FILE::NAME")
    if not chosen.criteria:
        raise ContentError(f"spec {chosen.name!r} has no criteria: there is no judge to calibrate")
    remember_spec_secrets(chosen, harness.root)
    try:
        store = session_store(harness.settings, harness.root)
    except HistoryError:
        store = None
    try:
        named = split_target(spec)[1]
        case = chosen.case if named is not None and named != base_name(chosen) else None
        found = find_run(run, chosen, None if isinstance(store, NoStore) else store, case)
        chosen = run_case(chosen, found, cases_of(chosen, harness))
        sample = take_sample(chosen, found, harness.registry())
        numbers = [criterion] if criterion else range(1, len(chosen.criteria) + 1)
        for number in numbers:
            sample = label(sample, chosen, number, met, note)
    except CalibrationError as err:
        raise ContentError(inert(str(err))) from None
    finally:
        if store is not None:
            store.close()
    written = write_sample(sample, Scrubber())
    verdict = "pass" if met else "fail"
    which = f"criterion {criterion}" if criterion else "every criterion"
    click.echo(f"labelled {which} {verdict}: {display_path(written)}")
