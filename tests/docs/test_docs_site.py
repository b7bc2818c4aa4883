"""The documentation site builds strictly and names every spec key, option and command.

The reference pages are generated from the code at build time (docs/hooks.py, mkdocs-click);
these tests build the site as CI does and read it, so a key, option or command the code adds
and the site misses fails here. Nothing here starts Claude Code.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner
from selenium.webdriver.remote.webdriver import WebDriver

from atom_cli.main import main
from tests.html_helpers import chromium_driver

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("mkdocs", reason="the `docs` extra (mkdocs) is not installed")
pytest.importorskip("material", reason="the `docs` extra (mkdocs-material) is not installed")
pytest.importorskip("mkdocs_click", reason="the `docs` extra (mkdocs-click) is not installed")


def _text(page: Path) -> str:
    """A built page's visible text: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with `mkdocs build --strict` from this checkout into a temp folder."""
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["NO_MKDOCS_2_WARNING"] = "1"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def site_text(site: Path) -> str:
    return "\n".join(_text(page) for page in sorted(site.rglob("*.html")))


def test_generated_pages_are_not_committed() -> None:
    """The generated reference exists only in a build: a committed copy could drift."""
    for page in ("spec-schema", "options", "exit-statuses", "cassette-format", "python-api"):
        assert not (REPO / "docs" / "reference" / f"{page}.md").exists()


def test_the_site_names_every_spec_key(site: Path) -> None:
    schema = json.loads((REPO / "pytest_atom/spec/spec_schema.json").read_text(encoding="utf-8"))
    keys = [*schema["$defs"]["spec"]["properties"], *schema["$defs"]["specList"]["properties"]]
    page = _text(site / "reference" / "spec-schema" / "index.html")
    missing = [key for key in keys if not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", page)]
    assert not missing, f"spec keys the spec schema page does not name: {missing}"
    for name in schema["$defs"]:
        assert name in page, name


def test_the_site_names_every_atom_option_and_ini_key(site: Path) -> None:
    """Read from pytest's own --help, not from the hook that writes the page."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # Whole names only: a help text wrapped inside a name (pytest 8.0's argparse breaks
    # on hyphens: "--atom-min-pass-" then "rate") leaves a piece, which is no option.
    options = set(re.findall(r"(?<![\w-])--atom(?:-[a-z0-9]+)*(?![\w-])", done.stdout))
    ini_keys = set(re.findall(r"^\s+(atom_\w+)\s", done.stdout, re.MULTILINE))
    assert "--atom-record-mode" in options and "atom_record_mode" in ini_keys
    page = _text(site / "reference" / "options" / "index.html")
    missing = sorted(
        name
        for name in options | ini_keys
        if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", page)
    )
    assert not missing, f"options the options page does not name: {missing}"


def test_the_site_names_every_public_and_legacy_name(site: Path) -> None:
    """The built Python API page, read as a reader sees it (tests/api holds the tables)."""
    import pytest_atom

    page = _text(site / "reference" / "python-api" / "index.html")
    modules = [importlib.import_module(m) for m in pytest_atom.PUBLIC_MODULES]
    names = [*pytest_atom.__all__, *(n for m in modules for n in getattr(m, "__all__", []))]
    missing = [n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", page)]
    assert not missing, f"public names the Python API page does not name: {missing}"
    assert re.search(r"except\s+AtomError", page)  # the root's docstring
    assert re.search(r"└──\s+HarnessError", page)  # the tree is drawn


def _commands(group: click.Group, prefix: str) -> list[str]:
    ctx = click.Context(group, info_name=prefix)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        found.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
    return found


def test_the_site_names_every_atom_command(site: Path) -> None:
    commands = _commands(main, "atom")
    assert "atom cassette refresh" in commands and "atom run" in commands
    page = _text(site / "reference" / "cli" / "index.html")
    missing = [c for c in commands if not re.search(rf"{re.escape(c)}(?![\w-])", page)]
    assert not missing, f"atom commands the commands page does not document: {missing}"


def test_every_page_is_in_the_navigation(site_text: str) -> None:
    """The tutorials, how-tos, explanation, limitations and glossary the issue asks for."""
    for title in (
        "Your first spec",
        "Your own repository",
        "Record, refresh and upgrade Claude Code",
        "CI with shards and atom results combine",
        "A Python project's environment",
        "Exit statuses",
        "Known limitations",
        "Glossary",
        "The statistics",
    ):
        assert title in site_text, title


def test_no_page_states_a_test_count() -> None:
    """Counts of tests and CLI processes rot with the next test added: generate or leave out."""
    count = re.compile(r"\b\d[\d,]*(?: of them)? (?:tests|CLI processes|`claude -p` sessions)\b")
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    stated = {
        str(page.relative_to(REPO)): found
        for page in pages
        if (found := count.findall(page.read_text(encoding="utf-8")))
    }
    assert not stated, f"pages that state counts which rot: {stated}"


def test_the_how_to_confines_mcp_servers_as_the_trust_model_says() -> None:
    """The trust model's table names what confines the MCP servers Claude Code starts; the
    how-to that configures them must say the same, not that they run unconfined."""
    model = (REPO / "docs" / "explanation" / "trust-model.md").read_text(encoding="utf-8")
    (row,) = [line for line in model.splitlines() if line.startswith("| MCP servers")]
    confinement = re.findall(r"`([^`]+)`", row.split("|")[2])[0]
    how_to = (REPO / "docs" / "how-to" / "claude-configuration.md").read_text(encoding="utf-8")
    start = how_to.index("**MCP servers are recorded and replayed.**")
    bullet = how_to[start : how_to.index("\n- **", start)]
    assert f"`{confinement}`" in bullet and "runs confined" in bullet
    assert "not confine" not in how_to


def test_the_readme_links_only_to_pages_that_exist() -> None:
    """The README links into docs/ by file; a moved or renamed page must not leave it dangling."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs/|CHANGELOG)[^)#]*)", readme)
    assert len(links) > 10
    missing = sorted({link for link in links if not (REPO / link).is_file()})
    assert not missing, f"README links to files that do not exist: {missing}"


def test_no_page_shows_a_backslash_before_a_pipe(site: Path) -> None:
    """A `\\|` escaped inside a table's code span reaches the page literally (`FILE\\|SPEC`)."""
    shown = {
        str(page.relative_to(site)): line.strip()
        for page in sorted(site.rglob("*.html"))
        for line in _text(page).splitlines()
        if "\\|" in line
    }
    assert not shown, f"pages that show a backslash before a pipe: {shown}"


def _hooks() -> ModuleType:
    """docs/hooks.py, the module mkdocs loads from its path (it is no package)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_generated_cell_escapes_pipes_outside_code_spans_only() -> None:
    """Outside a code span a pipe would split the cell; inside one the escape would show."""
    cell = _hooks()._cell
    assert cell("`FILE|SPEC` or a|b\nnext") == "`FILE|SPEC` or a\\|b next"


def test_the_atom_init_row_says_what_init_writes(site: Path, tmp_path: Path) -> None:
    """`atom init` leaves pyproject.toml alone and writes .atom/config.yaml: the page says so."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "pyproject.toml").read_text(encoding="utf-8") == "[project]\nname = 'x'\n"
    assert (tmp_path / ".atom" / "config.yaml").is_file()
    page = _text(site / "reference" / "cli" / "index.html")
    row = page[page.index("atom init [DIR]") :].split("atom cassette show", 1)[0]
    assert ".atom/config.yaml" in row and "merged" not in row, row
    assert "leaves pytest's own settings" in row, row


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """Debian's headless Chromium at 1280 px; a skip without it (a failure in CI)."""
    driver = chromium_driver(tmp_path_factory.mktemp("chromium"))
    try:
        yield driver
    finally:
        driver.quit()


def test_the_annotated_spec_example_fits_a_1280_px_window(site: Path, browser: WebDriver) -> None:
    """Its comments are the point of the example: none may hide behind a horizontal scroll."""
    browser.get((site / "reference" / "spec-format" / "index.html").as_uri())
    sizes = browser.execute_script(
        "const code = document.querySelector('.md-content pre > code');"
        "return [code.scrollWidth, code.clientWidth, code.textContent.length];"
    )
    scroll, client, length = sizes
    assert length > 2000, "the annotated example is no longer the page's first code block"
    assert scroll <= client, f"the example is {scroll} px wide in a {client} px block"


def test_the_pull_request_page_shows_its_snapshots_as_tables(
    site: Path, browser: WebDriver
) -> None:
    """The job summary and the comment docs/how-to/pull-requests.md shows (held to the code by
    tests/reports/test_markdown.py) render as tables: each row with its header's cells, the
    run text in code, a regression first."""
    browser.get((site / "how-to" / "pull-requests" / "index.html").as_uri())
    tables = browser.execute_script(
        "return [...document.querySelectorAll('.md-content table')].map(t => ({"
        "  rows: [...t.rows].map(r => [...r.cells].map(c => c.textContent.trim())),"
        "  code: t.querySelectorAll('td code').length, height: t.offsetHeight}));"
    )
    summary, comment = tables
    for table in tables:
        header, *rows = table["rows"]
        assert rows and all(len(row) == len(header) for row in rows), table["rows"]
        assert table["code"] >= len(rows) and table["height"] > 0
    assert summary["rows"][0][:4] == ["spec", "outcome", "change", "first cause"]
    assert summary["rows"][1][:3] == [
        "fix_failing_test.atom.yaml::fix-failing-test",
        "error",
        "regressed",
    ]
    assert comment["rows"][0] == [
        "item",
        "change",
        "before",
        "after",
        "the gate's verdict",
        "tokens",
        "cost $",
    ]
    assert comment["rows"][1][:2] == ["fix-failing-test", "regressed"]
