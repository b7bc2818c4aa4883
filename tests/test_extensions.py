"""Extension points: a distribution outside pytest_atom adds a report format, a match mode, a
check kind, a history store backend and an agent kind through pytest-atom's entry-point groups, and a real
run uses them, with nothing of the package touched.

The distribution is installed the way pip leaves one: its module and a ``*.dist-info`` folder
(METADATA, entry_points.txt) on the path, which `importlib.metadata` reads. The run is a
fresh ``pytest --atom`` process with that folder on PYTHONPATH: the shipped create-file spec
and its cassette, replayed in the plugin's match mode, accepted by the plugin's check kind,
published, given JUnit properties and written at the session's end by the plugin's format,
and recorded into the plugin's store.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from pytest_atom.errors import AtomError
from pytest_atom.extensions import declared, load

REPO = Path(__file__).resolve().parents[1]

#: The plugin's one module: a format, a mode, a kind and a store, each a few lines on the
#: public protocols. Each writes what it did to ``used.log`` beside itself.
EXTENSION = '''
"""An outside distribution's extensions to pytest-atom."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_atom.checks.kind import Entry, Scene
from pytest_atom.history.sqlite import SqliteStore
from pytest_atom.replay.matchers.conversation import ConversationMatcher
from pytest_atom.reports.format import ReportFormat, SessionEnd, Written
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord

LOG = Path(__file__).with_name("used.log")


def note(line: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\\n")


class Lines(ReportFormat[str]):
    name = "lines"

    def render(self, result: Any, *, repeat: int | None = None) -> str:
        return f"{result.spec.name} {'passed' if result.passed else 'failed'}"

    def publish(self, result: Any, *, repeat: int | None, report_dir: Path | None) -> None:
        note("format " + self.render(result, repeat=repeat))

    def properties(self, result: Any) -> list[tuple[str, object]]:
        return [("lines", self.render(result))]

    def view(self, result: Any, *, repeat: int | None, settings: Any) -> str:
        return self.render(result, repeat=repeat)

    def finish(self, end: SessionEnd) -> list[Written]:
        path = end.root / "lines.txt"
        path.write_text("\\n".join(end.views.get("lines", {}).values()) + "\\n", encoding="utf-8")
        return [Written("lines report", path)]


class Logged(ConversationMatcher):
    name = "logged"

    def key(self, kind: Any, body: Any, *, system: bool = False) -> str:
        note(f"mode {kind}")
        return super().key(kind, body, system=system)


class LineCount:
    name = "line_count"
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
        "required": ["path", "lines"],
        "additionalProperties": False,
    }
    reads_run = False
    needs_tool = None

    def build(self, entry: Entry, value: Any) -> dict[str, Any]:
        return {"path": entry.workspace_path(value["path"]), "lines": value["lines"]}

    def describe(self, params: Any) -> str:
        return f"line_count {params['path']} == {params['lines']}"

    def confined(self, params: Any) -> bool:
        return False

    def run(self, check: Any, scene: Scene) -> CheckResult:
        text = (scene.workspace / check.params["path"]).read_text(encoding="utf-8")
        count = len(text.splitlines())
        note(f"kind {check.params['path']} has {count}")
        return CheckResult(check, count == check.params["lines"], f"{count} lines", text)


KIND = LineCount()
FORMAT = Lines()
MATCHER = Logged()


class FileWriter:
    name = "file_writer"
    noun = "the file writer"

    def executor(self, value: Any, session: Any, import_paths: Any) -> Writer:
        return Writer(value, session)

    def source(self, value: Any, import_paths: Any) -> Path:
        return Path(__file__)


class Writer:
    """An executor that writes the spec's file and answers, without a model."""

    role = "executor"
    loops = False

    def __init__(self, value: Any, session: Any) -> None:
        self.value, self.session = value, session

    @property
    def env(self) -> Any:
        return self.session.env

    def run(self, prompt: str, conversation_dir: Path, **_: Any) -> IterationRecord:
        (conversation_dir / self.value["path"]).write_text(self.value["text"] + "\\n")
        note(f"agent wrote {self.value['path']}")
        return IterationRecord(0, output=f"wrote {self.value['path']}")

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        pass

    def structured(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("an executor only")


AGENT = FileWriter()


class NotedStore(SqliteStore):
    @classmethod
    def open(cls, url: str, root: Path) -> NotedStore:
        note("store " + url.split("://", 1)[1])
        return cls.connect(root / url.split("://", 1)[1])
'''

ENTRY_POINTS = """\
[pytest_atom.report_formats]
lines = atom_ext_demo:FORMAT

[pytest_atom.match_modes]
logged = atom_ext_demo:MATCHER

[pytest_atom.check_kinds]
line_count = atom_ext_demo:KIND

[pytest_atom.stores]
noted = atom_ext_demo:NotedStore

[pytest_atom.agents]
file_writer = atom_ext_demo:AGENT
"""


def install(folder: Path, entry_points: str = ENTRY_POINTS) -> Path:
    """The demo distribution as pip installs one: its module and its dist-info."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "atom_ext_demo.py").write_text(textwrap.dedent(EXTENSION), encoding="utf-8")
    info = folder / "atom_ext_demo-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: atom-ext-demo\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return folder


@pytest.mark.slow
def test_an_installed_distribution_adds_a_format_a_mode_a_kind_and_a_store(
    tmp_path: Path,
) -> None:
    site = install(tmp_path / "site")
    project = tmp_path / "project"
    specs = REPO / "fixtures" / "specs"
    project.mkdir()
    shutil.copytree(specs / "scripts", project / "scripts")
    shutil.copytree(specs / "cassettes" / "create_file", project / "cassettes" / "create_file")
    # A part Claude Code owns, changed in the copy: no recorded body is identical to a live
    # one any more, so every request is matched through the mode's key (drift, not a miss).
    [cassette] = (project / "cassettes" / "create_file").glob("*.yaml")
    recorded = cassette.read_text(encoding="utf-8")
    assert '"max_tokens": 128000' in recorded
    cassette.write_text(recorded.replace('"max_tokens": 128000', '"max_tokens": 64000'))
    # Without its criterion: the reflector's recorded input holds the checks' results, so
    # a check the recording lacked would rightly change what the reflector is asked.
    spec = (specs / "create_file.atom.yaml").read_text(encoding="utf-8")
    criteria = '  - hello.txt holds the greeting "hello, world" and nothing else.\n'
    assert criteria in spec
    spec = spec.replace("criteria:\n" + criteria, "")
    (project / "create_file.atom.yaml").write_text(
        spec + "  - line_count: {path: hello.txt, lines: 1}\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    command = [sys.executable, "-m", "pytest", "--atom", "-q", "-p", "no:cacheprovider"]
    command += ["--atom-match", "logged", "--atom-history", "noted://history.db"]
    command += ["--junitxml", "junit.xml"]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr

    used = (site / "used.log").read_text(encoding="utf-8").splitlines()
    assert "kind hello.txt has 1" in used  # the plugin's kind judged the workspace
    assert "format create-file passed" in used  # its format published the finished run
    # ... gave the run's JUnit property, and wrote its file from every run's view at the end
    assert (
        '<property name="lines" value="create-file passed"' in (project / "junit.xml").read_text()
    )
    assert (project / "lines.txt").read_text(encoding="utf-8") == "create-file passed\n"
    assert f"pytest-atom: lines report written to {project / 'lines.txt'}" in done.stdout
    assert "mode turn" in used  # its mode keyed the replay's requests
    assert "store history.db" in used  # its backend opened the store, by its scheme
    # The store holds the run, with the plugin kind's check among its checks.
    with closing(sqlite3.connect(project / "history.db")) as db:
        [(checks,)] = db.execute("SELECT checks FROM atom_items").fetchall()
    assert "line_count" in checks


#: A spec whose executor is the outside distribution's agent kind.
WRITTEN = """\
name: written
prompt: Write hello.txt.
agent: {file_writer: {path: hello.txt, text: "hello, world"}}
script: scripts/create_file.yaml
accept:
  - file_contains: {path: hello.txt, pattern: "^hello, world$"}
"""


def test_an_installed_distribution_adds_an_agent_kind_a_spec_names(tmp_path: Path) -> None:
    site = install(tmp_path / "site")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(REPO / "fixtures" / "specs" / "scripts", project / "scripts")
    (project / "written.atom.yaml").write_text(WRITTEN, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    command = [sys.executable, "-m", "pytest", "--atom", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    used = (site / "used.log").read_text(encoding="utf-8").splitlines()
    assert "agent wrote hello.txt" in used  # the plugin's agent ran the spec, checked after

    # A name no distribution declares is the spec's error, at its line.
    (project / "written.atom.yaml").write_text(WRITTEN.replace("file_writer", "typist"))
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert "no agent kind 'typist' is installed: 'agent:' takes one of claude-code, sdk, " in (
        done.stdout
    )


def test_the_option_offers_an_installed_mode_and_the_schema_takes_an_installed_kind(
    tmp_path: Path,
) -> None:
    """Read in a fresh interpreter: the names come from the installed metadata alone."""
    site = install(tmp_path / "site")
    probe = (
        "import json\n"
        "from pytest_atom.settings.modes import MATCH_MODES\n"
        "from pytest_atom.spec_loader.build import check_schemas\n"
        "from pytest_atom.reports.format import report_formats\n"
        "print(json.dumps([MATCH_MODES, sorted(check_schemas(())),"
        " [f.name for f in report_formats()]]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    modes, kinds, formats = json.loads(done.stdout)
    assert modes == ["conversation", "strict", "structural", "logged"]
    assert "line_count" in kinds and "file_exists" in kinds
    assert formats == [
        "html",
        "json-trace",
        "junit-properties",
        "markdown",
        "otel",
        "text",
        "lines",
    ]


def test_a_name_two_distributions_declare_is_refused(tmp_path: Path) -> None:
    site = install(tmp_path / "site", "[pytest_atom.match_modes]\nstrict = atom_ext_demo:MATCHER\n")
    sys.path.insert(0, str(site))
    try:
        with pytest.raises(AtomError, match=r"'strict' in the entry-point group .* atom-ext-demo"):
            declared("pytest_atom.match_modes")
    finally:
        sys.path.remove(str(site))


def test_an_entry_point_whose_object_has_another_name_is_refused(tmp_path: Path) -> None:
    site = install(tmp_path / "site", "[pytest_atom.match_modes]\nloose = atom_ext_demo:MATCHER\n")
    sys.path.insert(0, str(site))
    try:
        from pytest_atom.replay.matchers.base import Matcher

        with pytest.raises(AtomError, match="names an object called 'logged'"):
            load("pytest_atom.match_modes", Matcher)
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("atom_ext_demo", None)


def test_an_entry_point_that_is_not_the_protocol_is_refused(tmp_path: Path) -> None:
    site = install(tmp_path / "site", "[pytest_atom.check_kinds]\nbad = atom_ext_demo:LOG\n")
    sys.path.insert(0, str(site))
    try:
        from pytest_atom.checks.kind import CheckKind

        with pytest.raises(AtomError, match=r"bad = atom_ext_demo:LOG .* is not a CheckKind"):
            load("pytest_atom.check_kinds", CheckKind)
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("atom_ext_demo", None)
