"""`atom label RUN SPEC --pass|--fail`: a labelled sample, taken from a run, for calibration."""

from __future__ import annotations

from pathlib import Path

import click

from atom_cli.common import ContentError, cases_of, harness_for, load_named, split_target
from pytest_atom.calibration.samples import CheckSeen, write_sample
from pytest_atom.calibration.taking import RunFound, label, take_sample
from pytest_atom.errors import CalibrationError, HistoryError
from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import NoStore, Store, session_store
from pytest_atom.inert import inert
from pytest_atom.judge.calibration import base_name
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber, remember_spec_secrets
from pytest_atom.run_folders.retention import folder_spec_name, parse_run_name
from pytest_atom.spec.types import Spec


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
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="project config (default: .atom/config.yaml here or above).",
)
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
    path, _ = split_target(spec)
    harness = harness_for({}, config_path, [path if path.is_file() else path / "x"])
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


def run_case(spec: Spec, found: RunFound, cases: dict[str, Spec]) -> Spec:
    """The case of `spec` that the run ran (`cases`: every case by id; {} without cases):
    the store's record of it, else the run folder's name (``<spec>[<case>]-<stamp>-…``).
    Its rendered criteria are the ones the human labels and the judge is shown."""
    if not cases:
        return spec
    if found.case is not None and found.case in cases:
        return cases[found.case]
    named = parse_run_name(found.folder.name)
    for case in cases.values():
        if named is not None and named[0] == folder_spec_name(case.name):
            return case
    raise CalibrationError(
        f"cannot tell which case of spec {base_name(spec)!r} the run ran (its cases: "
        f"{', '.join(cases)}): give a run of the history store, or the case's run folder",
        found.folder,
    )


def find_run(run: str, spec: Spec, store: Store | None, case: str | None = None) -> RunFound:
    """RUN as a run folder, else as a run of the store (its item of `case`, when SPEC named
    one); CalibrationError says which it tried."""
    folder = Path(run)
    if folder.is_dir():
        item = _item_for_folder(folder, spec, store)
        return _found(folder.resolve(), item)
    if store is None:
        raise CalibrationError(
            "no such run folder, and no history store to look the run up in "
            "(give a run folder from .atom/runs, or turn --history on)",
            folder,
        )
    try:
        record = store.run(run)
    except HistoryError as exc:
        raise CalibrationError(
            f"neither a run folder nor a run of the store: {exc}", folder
        ) from None
    items = [
        i
        for i in store.items(record.id)
        if i.spec == base_name(spec) and (case is None or i.case == case)
    ]
    ran = sorted({i.case for i in items if i.case is not None})
    if len(ran) > 1:
        raise CalibrationError(
            f"run {record.id} ran {len(ran)} cases of spec {base_name(spec)!r} "
            f"({', '.join(ran)}): name one as FILE::{base_name(spec)}[CASE]",
            folder,
        )
    item = items[0] if items else None
    if item is None or not item.run_folder:
        raise CalibrationError(
            f"run {record.id} has no item of spec {base_name(spec)!r} with a run folder "
            "(`atom history` lists the runs of a spec)",
            folder,
        )
    if not Path(item.run_folder).is_dir():
        raise CalibrationError(
            f"run {record.id}'s folder is gone (pruned by --keep-runs?): {item.run_folder}",
            Path(item.run_folder),
        )
    return _found(Path(item.run_folder), item)


def _found(folder: Path, item: ItemRecord | None) -> RunFound:
    if item is None:
        return RunFound(folder)
    checks = tuple(CheckSeen(c.name, c.passed, c.detail) for c in item.checks)
    return RunFound(folder, item.run_id, checks, item.case)


def _item_for_folder(folder: Path, spec: Spec, store: Store | None) -> ItemRecord | None:
    """The store's item whose run folder is `folder` (None: not recorded)."""
    if store is None:
        return None
    wanted = str(folder.resolve())
    for record in store.runs(limit=50, spec=base_name(spec)):
        for item in store.items(record.id):
            if item.run_folder and str(Path(item.run_folder).resolve()) == wanted:
                return item
    return None
