"""What the `atom` commands share, so that no command imports another: errors and spec
loading, the setting options `atom run` takes, the project's spec paths and history store,
and the harness and named specs of `atom label` and `atom calibrate`.

The history store is `--history`, else the project's own setting (`--atom-history`'s ini key
or ``history:`` in `.atom/config.yaml`), resolved from the project's root as `pytest --atom`
resolves it; only those places are read, not the harness (its conftests and check kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pytest_atom.errors import HistoryError, SettingsError, SpecError
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.inert import inert
from pytest_atom.judge.calibration import base_name
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.run.harness import Harness, file_layers, host_harness
from pytest_atom.settings.options import BY_NAME, OPTIONS, Option
from pytest_atom.settings.project import find_ini, find_project
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_files, spec_files

if TYPE_CHECKING:
    from pytest_atom.checks.registry import CheckRegistry

F = TypeVar("F", bound=Callable[..., Any])


class ContentError(click.ClickException):
    """A spec or config file that cannot be used, or a harness that cannot run (no Claude
    Code CLI): exit 2 like a usage error, but without the usage banner, since the command
    line itself was right."""

    exit_code = 2


def collect_specs(files: Iterable[Path], registry: CheckRegistry | None = None) -> list[Spec]:
    """The specs in `files` (with the project's check kinds), for the commands that read
    specs without running them; a malformed one is a ContentError, and finding none a usage
    error."""
    files = list(files)
    try:
        specs = load_files(files, registry.kinds() if registry else ())
    except SpecError as err:
        raise ContentError(inert(str(err))) from None
    if not specs:
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {', '.join(map(str, files))}")
    return specs


if TYPE_CHECKING:
    _ParamType = click.ParamType[Any]
else:  # generic only from click 8.2; pyproject allows 8.1
    _ParamType = click.ParamType


class SettingType(_ParamType):
    """A setting's own parser (its row's, `pytest_atom.settings.options`) as a click type, as
    pytest's ``--atom-*`` options use it: a value is checked the same on both command
    lines, in the ini file and in `.atom/config.yaml`. The value stays as given: pytest,
    which `atom run` hands it to, parses it again."""

    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = option.kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            self.option.parse(value)
        except ValueError as exc:
            self.fail(f"{exc}, not {value!r}", param, ctx)
        return value


def click_type(option: Option) -> _ParamType:
    """The click type of an option of the table: its choices, a path, or its parser."""
    if option.choices:
        return click.Choice(option.choices)
    if option.path:
        return click.Path(
            exists=option.exists,
            file_okay=option.path == "file",
            dir_okay=option.path == "dir",
            path_type=Path,
        )
    return SettingType(option)


def setting_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`atom run`'s options for every setting of the option table (`--NAME`, as pytest's
    `--atom-NAME`), with the same help."""
    for option in reversed([o for o in OPTIONS if o.command_line]):
        if option.kind == "flag":
            decorate = click.option(option.run_flag, option.name, is_flag=True, help=option.help)
        else:
            decorate = click.option(
                option.run_flag,
                option.name,
                type=click_type(option),
                default=None,
                # click names a path's kind (DIRECTORY, FILE) itself, as `atom run` always did
                metavar=None if option.path else option.metavar,
                help=option.help,
            )
        command = decorate(command)
    return command


def atom_paths(*, quiet: bool, argument: str = "PATHS") -> tuple[Path, ...]:
    """The spec paths `pytest --atom` takes when none are named: `paths:` in
    `.atom/config.yaml` (or `atom_paths` in pytest's ini), through the one resolver."""
    try:
        project = find_project()  # the root `pytest --atom` and `atom run` use
        root, config = project.root, project.config
        ini = find_ini(root)
        settings = resolve(file_layers(ini.values if ini else {}, config))
    except SettingsError as err:  # a ConfigError too
        raise click.UsageError(str(err)) from None
    paths = tuple(settings.spec_paths(root))
    if ini is not None and ini.values.get("atom_paths"):
        key, where = "atom_paths", display_path(ini.path)
    else:
        key, where = "paths", display_path(config.path) if config.path else ".atom/config.yaml"
    if not paths:
        unset = (
            f"{display_path(config.path)} sets no paths"
            if config.path
            else f"{display_path(ini.path)} sets no atom_paths"
            if ini
            else "no pytest settings found"
        )
        raise click.UsageError(
            f"no {argument} given, and {unset}: name spec files or folders, or set "
            "paths: [specs] in .atom/config.yaml"
        )
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise click.UsageError(
            f"{key} in {where} names {', '.join(map(display_path, missing))}, which does not exist"
        )
    if not quiet:
        shown = " ".join(display_path(p) for p in paths)
        click.echo(f"{key} from {where}: {shown}")
    return paths


def store_setting(given: str | None) -> tuple[str, Path]:
    """The store's URL or path, and the project's root: `given`, else the project's
    setting (the ini file, `.atom/config.yaml`), else `.atom/history.db`."""
    row = BY_NAME["history"]
    try:
        project = find_project()
        ini = find_ini(project.root)
        config = project.config
        settings = resolve(  # the three places that name it, strongest first
            [
                Layer("the command line", {"history": given}, key=lambda _: "--history"),
                Layer(
                    "the ini file",
                    {"history": (ini.values if ini else {}).get(row.ini_name)},
                    key=lambda _: row.ini_name,
                ),
                Layer(
                    str(config.path or ".atom/config.yaml"),
                    {"history": config.settings.get("history")},
                ),
            ]
        )
    except SettingsError as error:
        raise click.ClickException(str(error)) from None
    return store_url(settings.history, project.root), project.root


def project_store(history: str | None) -> Store:
    """The store `history` names (None: the project's setting); ClickException when it
    does not exist yet (reading never creates one) or cannot be opened (HistoryError names
    the store and the fix)."""
    where, root = store_setting(history)
    if where != OFF and "://" not in where and not Path(where).exists():
        raise click.ClickException(
            f"no history store at {where} yet: every pytest --atom and atom run session "
            "records one there (or name another with --history)"
        )
    try:
        return open_store(where, root)
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None


#: ``--config PATH``: the project's config file, instead of the one found from here up.
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="project config (default: .atom/config.yaml here or above).",
)


def history_option(dest: str, does: str = "read") -> Callable[[F], F]:
    """``--history URL``: the store to read (or record into), instead of the project's."""
    return click.option(
        "--history",
        dest,
        default=None,
        metavar="URL",
        help=f"the history store to {does}: a SQLite path, postgresql://..., or none "
        "(default: the project's --atom-history, .atom/history.db).",
    )


def harness_for(
    options: dict[str, Any], config_path: Path | None, targets: Sequence[str]
) -> Harness:
    """The harness as `atom run` builds it: these options over the ini file and
    `.atom/config.yaml`, and the conftests (their check kinds) of the specs `targets` name."""
    paths = [split_target(target)[0] for target in targets]
    folders = {path.parent if path.is_file() else path for path in paths}
    try:
        return host_harness(options, config_path=config_path, spec_dirs=folders)
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
