"""A mod's ``*.test.ts`` and ``*.test.tsx`` files as pytest items, run by the pinned CLI's
``claude plugin test`` (`pytest_atom.modtests`; docs/how-to/plugin-test.md).

One item per file: the CLI runs a whole folder and names its tests only as it runs them,
so pytest can neither collect nor pick one test. The item fails when the CLI says a test
of its file failed; its failure report gives each failed test's title, duration and
message, a JUnit property each test's line (``pass [1.23ms] TITLE``), and a report section
the CLI's whole output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_atom.errors import AtomError
from pytest_atom.pytest.settings import suite_run

if TYPE_CHECKING:
    from pytest_atom.modtests import FileRun

#: The one item of a test file: it runs what ``claude plugin test`` runs of that file.
ITEM_NAME = "plugin-test"


def collect_mod_test(file_path: Path, parent: pytest.Collector, **node: Any) -> ModTestFile | None:
    """A collector for `file_path` when it is a test file of a mod, else None; `node`:
    pytest's keywords for it (an inert node id)."""
    from pytest_atom.modtests import mod_root

    mod = mod_root(file_path)
    # A copy a run made (its run folder may be inside the mod) is no test of the mod.
    if mod is None or file_path.is_relative_to(suite_run(parent.config).harness.runs_dir):
        return None
    collector = ModTestFile.from_parent(parent, path=file_path, **node)
    collector.mod = mod
    return collector


class ModTestFile(pytest.File):
    mod: Path

    def collect(self) -> Iterator[pytest.Item]:
        yield ModTestItem.from_parent(self, name=ITEM_NAME)


class ModTestItem(pytest.Item):
    """A mod's test file: running it runs the file with the CLI."""

    def runtest(self) -> None:
        from pytest_atom.modtests import run_file

        assert isinstance(self.parent, ModTestFile)
        run = run_file(self.path, self.parent.mod, suite_run(self.config).harness.runs_dir)
        self.add_report_section("call", "claude plugin test", run.output)
        for test in run.tests:
            word = "pass" if test.passed else "fail"
            self.user_properties.append(("mod_test", f"{word} [{test.ms:.2f}ms] {test.title}"))
        if not run.passed:
            pytest.fail(_failure(run), pytrace=False)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        # No CLI or no sandbox runtime here: the error says how to get them.
        if isinstance(excinfo.value, AtomError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"claude plugin test {self.path.name}"


def _failure(run: FileRun) -> str:
    """Which tests failed and why, as the CLI said (inert); or why none ran."""
    if run.exit_code is None:
        return f"claude plugin test ran out of time after {run.seconds:.0f}s:\n{run.output}"
    failed = [t for t in run.tests if not t.passed]
    if not failed:  # the CLI refused the mod or the file: its message says why
        return f"claude plugin test exited {run.exit_code}:\n{run.output}"
    passed = len(run.tests) - len(failed)
    lines = [f"claude plugin test: {len(failed)} failed, {passed} passed"]
    for test in failed:
        lines += [f"(fail) {test.title} [{test.ms:.2f}ms]", *(f"  {m}" for m in test.message)]
    return "\n".join(lines)
