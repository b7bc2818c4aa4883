"""The own-repository tutorial runs as written, offline: its spec, its script, its commands.

The spec and the script are read from the page's code blocks (each names its file on its
first line) and step 3's commands run verbatim in a small project with a real off-by-one,
so the page and the test cannot drift apart. The script stands in for the model: no
network, no API key.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import user_shell_env, write

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorials" / "own-repository.md"

#: The project the tutorial describes: `page()` starts page 1 at the eleventh item.
PAGES = '''"""Pagination: the items of one page."""


def page(items, number, size=10):
    """Page `number` (counted from 1) of `items`, `size` items a page."""
    start = number * size
    return items[start : start + size]
'''
TEST_PAGES = """from pages import page

ITEMS = [str(n) for n in range(25)]


def test_the_first_page_starts_at_the_first_item():
    assert page(ITEMS, 1) == ITEMS[:10]


def test_the_last_page_holds_the_rest():
    assert page(ITEMS, 3) == ITEMS[20:]
"""


def named_blocks(page: str) -> dict[str, str]:
    """The page's YAML blocks whose first line names their file (`# specs/x.yaml`)."""
    blocks = re.findall(r"```yaml\n# (\S+)\n(.*?)```", page, re.DOTALL)
    return {path: text for path, text in blocks}


def step_commands(page: str, heading: str) -> str:
    """The first ```bash block of the section whose heading starts with `heading`."""
    section = page.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, f"the tutorial's section {heading!r} has no ```bash block"
    return block.group(1)


def test_the_tutorial_shows_a_spec_and_the_script_it_names() -> None:
    page = TUTORIAL.read_text(encoding="utf-8")
    blocks = named_blocks(page)
    spec = yaml.safe_load(blocks["specs/pagination.atom.yaml"])
    assert f"specs/{spec['script']}" in blocks, "the spec's script is not on the page"
    script = yaml.safe_load(blocks[f"specs/{spec['script']}"])
    tools = [use["name"] for turn in script["turns"] for use in turn.get("tool_use", [])]
    assert tools.index("Read") < tools.index("Edit"), "the script must Read before it Edits"
    assert "ANTHROPIC_API_KEY" not in step_commands(page, "3.")


@pytest.mark.slow
def test_the_own_repository_tutorial_runs_offline(tmp_path: Path, claude_bin: Path) -> None:
    page = TUTORIAL.read_text(encoding="utf-8")
    project = tmp_path / "project"
    write(project / "pages" / "__init__.py", PAGES)
    write(project / "tests" / "test_pages.py", TEST_PAGES)
    write(project / "pyproject.toml", '[project]\nname = "pages"\nversion = "0.1"\n')
    # As in any Python repository: without it the tests' .pyc files (which hold the copy's
    # mtimes) would reach the diff the reflector reads, and every replay would diverge.
    write(project / ".gitignore", "__pycache__/\n")
    env = user_shell_env(claude_bin)
    setup = "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm t"
    for path, text in named_blocks(page).items():
        write(project / path, text)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", f"{setup} && atom init .\n{step_commands(page, '3.')}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 spec: 1 ok" in output, output
    cassette = project / "specs" / "cassettes" / "pagination" / "pagination.yaml"
    assert "scripted://pagination.yaml" in cassette.read_text(encoding="utf-8"), output
    assert output.count("1 passed") >= 2, output
    # The agent fixed its copy; the project itself is untouched.
    assert "start = number * size" in (project / "pages" / "__init__.py").read_text()
