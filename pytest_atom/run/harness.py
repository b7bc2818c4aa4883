"""One harness behind every front end: `pytest --atom`, the `atom` fixture, `atom run`
and `atom validate` all run a spec through `Harness.run`.

A front end only gathers its layers of settings and its hooks; the check registry, the
resolved `RunSettings`, the verdict hook, the reports and run-folder retention are the
same everywhere. Inside pytest the hooks are pytest's own (a spec file's `ihook`);
outside, `host_hooks` loads the project's conftests the way pytest would, into a plugin
manager of its own (pluggy's host-application pattern).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pluggy

from pytest_atom import hooks
from pytest_atom.baseline.compare import BaselineGate
from pytest_atom.checks.builtin import default_registry
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.cost.spend import SpendLimit
from pytest_atom.replay.reachable import UpstreamCheck
from pytest_atom.replay.scrub import remember_env_files
from pytest_atom.reports.format import report_formats
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run_folders import prune_runs
from pytest_atom.settings.config import AtomConfig
from pytest_atom.settings.options import BY_NAME, INI_SETTINGS, RunSettings
from pytest_atom.settings.project import find_ini, find_project
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec.types import Spec

#: The hooks every front end calls: ``pytest_atom_register_checks`` and ``pytest_atom_verdict``.
HookRelay = Any


class AroundRun(Protocol):
    """What stands around each run of a spec: the outcome cache, which sits above the
    run, so the suite hands it to the harness instead of the harness importing it."""

    def around(
        self, spec: Spec, settings: RunSettings, repeat: int | None, run: Callable[[], SpecResult]
    ) -> SpecResult:
        """`run()`'s result with its input digest, or the stored outcome in its place."""
        ...


@dataclass
class Harness:
    """What a spec run needs, assembled once by a front end."""

    settings: RunSettings
    root: Path  # the project's root: runs and prompts are found from here
    config: AtomConfig
    hook: HookRelay
    started: datetime = field(default_factory=datetime.now)
    _registry: CheckRegistry | None = field(default=None, init=False, repr=False)
    #: How many processes share the spending limit, and how the front end names the option.
    workers: int = 1
    spend_option: str = "--atom-max-cost-usd"
    spend: SpendLimit | None = field(default=None, init=False)  # this process's share
    around_run: AroundRun | None = field(default=None, init=False)  # the suite sets it
    #: Each upstream is connected to once before its first recording (`replay.reachable`).
    upstreams: UpstreamCheck = field(default_factory=UpstreamCheck, init=False)

    def __post_init__(self) -> None:
        limit = self.settings.max_cost_usd
        if limit is not None:
            self.spend = SpendLimit(limit / max(1, self.workers), self.spend_option)

    @property
    def runs_dir(self) -> Path:
        return self.settings.runs_under(self.root)

    @property
    def report_dir(self) -> Path | None:
        return self.settings.output("report", self.root)

    def baseline_gate(self) -> BaselineGate | None:
        """None: no baseline asked for; BaselineError names the file and the fix."""
        path = self.settings.output("baseline", self.root)
        if path is None:
            return None
        return BaselineGate(path, self.settings.baseline_tolerance)

    def registry(self, hook: HookRelay | None = None) -> CheckRegistry:
        """The built-in check kinds plus those the hooks register (`hook`: a narrower relay)."""
        if hook is None and self._registry is not None:
            return self._registry
        registry = default_registry()
        (hook or self.hook).pytest_atom_register_checks(registry=registry)
        if hook is None:
            self._registry = registry
        return registry

    @staticmethod
    def load_machinery() -> None:
        """Load what running a spec needs (the gateway, the agents, the report formats, the
        secret detector) before the first spec's clock starts: otherwise its time would
        carry the session's imports, and its figures depend on where it stands in the run."""
        from pytest_atom.replay.detector import load_detector

        report_formats()
        from pytest_atom.run import spec_run  # noqa: F401

        load_detector()

    def run(
        self,
        spec: Spec,
        *,
        registry: CheckRegistry | None = None,
        on_event: OnEvent | None = None,
        repeat: int | None = None,
        settings: RunSettings | None = None,
    ) -> SpecResult:
        """Run one spec; its reports are written and the verdict hook called. `repeat`:
        which repeat this is (None: it runs once). A test's settings take the session's seed."""
        settings = settings or self.settings
        if settings.seed is None:
            settings = replace(settings, seed=self.settings.seed)
        resolved, registry = settings, registry or self.registry()

        def run() -> SpecResult:
            # Not with the module: collecting specs builds a harness, and runs nothing.
            from pytest_atom.run.spec_run import RunScope, run_spec

            self.load_machinery()
            return run_spec(
                spec,
                runs_dir=self.runs_dir,
                settings=resolved,
                on_event=on_event,
                repeat=repeat,
                scope=RunScope(self.root, self.config, registry, self.spend, self.upstreams),
            )

        wrapper = self.around_run
        result = run() if wrapper is None else wrapper.around(spec, settings, repeat, run)
        for report_format in report_formats():  # every installed format, each run
            report_format.publish(result, repeat=repeat, report_dir=self.report_dir)
        self.hook.pytest_atom_verdict(spec=spec, verdict=result.verdict, result=result)
        return result

    def finish(self) -> None:
        """After the session: old run folders go (this session's failed ones stay), and
        the set-up cache's least recently used entries beyond its bound."""
        prune_runs(
            self.runs_dir.resolve(),
            self.settings.keep_runs,
            session_start=self.started,
            max_bytes=self.settings.keep_runs_size,
        )
        if self.settings.setup_cache_size:
            from pytest_atom.setup_cache.entries import cache_root, prune, to_prune

            prune(to_prune(cache_root(), max_bytes=self.settings.setup_cache_size))


def file_layers(ini: dict[str, Any], config: AtomConfig) -> list[Layer]:
    """The ini file's and `.atom/config.yaml`'s settings, as layers (weakest last)."""
    ini_values = {name: ini.get(BY_NAME[name].ini_name) for name in INI_SETTINGS}
    config_source = str(config.path) if config.path else ".atom/config.yaml"
    return [
        Layer("the ini file", ini_values, key=lambda name: BY_NAME[name].ini_name),
        Layer(config_source, dict(config.settings)),
    ]


def build_harness(
    layers: Iterable[Layer],
    *,
    root: Path,
    config: AtomConfig,
    hook: HookRelay,
    workers: int = 1,
    spend_option: str = "--atom-max-cost-usd",
) -> Harness:
    """The one factory: settings resolved from `layers` (strongest first), seed included."""
    remember_env_files(root)  # reports written here scrub the project's env file secrets
    return Harness(
        resolve(layers).with_seed(),
        root,
        config,
        hook,
        workers=workers,
        spend_option=spend_option,
    )


def host_harness(
    command_line: Mapping[str, Any],
    *,
    config_path: Path | None = None,
    spec_dirs: Iterable[Path] = (),
    spend_option: str = "--max-cost-usd",
) -> Harness:
    """The harness outside pytest (`atom run`, `atom validate`): the command's options,
    pytest's ini file, `.atom/config.yaml` and the conftests of the project's root
    (`find_project`'s, as for `pytest --atom`)."""
    project = find_project(config_path=config_path)
    root, config = project.root, project.config
    ini = find_ini(root)
    cli = Layer("the command line", command_line, key=lambda name: "--" + name.replace("_", "-"))
    return build_harness(
        [cli, *file_layers(ini.values if ini else {}, config)],
        root=root,
        config=config,
        hook=host_hooks(root, spec_dirs),
        spend_option=spend_option,
    )


class _HostPluginManager(pluggy.PluginManager):
    """Takes ``pytest_atom_*`` functions as hooks unmarked, as pytest does in a conftest."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith("pytest_atom_"):
            return None
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and callable(getattr(plugin, name, None)):
            return {}
        return opts


def host_hooks(root: Path, spec_dirs: Iterable[Path] = ()) -> HookRelay:
    """Hooks outside pytest: the project's conftests (`root`'s and those on the way down
    to each spec's folder, as pytest collects them) and ``pytest_atom`` entry points."""
    manager = _HostPluginManager("pytest")
    manager.add_hookspecs(hooks)
    manager.load_setuptools_entrypoints("pytest_atom")
    for conftest in conftest_files(root, spec_dirs):
        manager.register(_import_conftest(conftest), name=str(conftest))
    return manager.hook


def conftest_files(root: Path, spec_dirs: Iterable[Path]) -> list[Path]:
    """`root`/conftest.py and every conftest.py on the way down to each of `spec_dirs`,
    outermost first (a spec folder outside `root` contributes only its own)."""
    root = root.resolve()
    found: dict[Path, None] = {}
    for folder in sorted({d.resolve() for d in spec_dirs} | {root}):
        chain = [folder, *folder.parents]
        chain = chain[: chain.index(root) + 1] if root in chain else [folder]
        for step in reversed(chain):
            if (step / "conftest.py").is_file():
                found[step / "conftest.py"] = None
    return list(found)


def _import_conftest(path: Path) -> Any:
    """Import a conftest as pytest's default ``prepend`` import mode does: its folder
    goes first on sys.path, so its own imports of neighbouring modules work."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"_atom_conftest_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
