"""MkDocs hooks: the reference pages are generated from the code at build time, so they cannot drift.

Nothing generated is committed. `on_files` adds each generated page as a virtual file:

- `reference/spec-schema.md` from `pytest_atom/spec/spec_schema.json`;
- `reference/options.md` from the option table (`pytest_atom.settings.options`) and the plugin's
  `pytest_addoption`;
- `reference/exit-statuses.md` from pytest's `ExitCode` and pytest-atom's own statuses;
- `reference/cassette-format.md` from `pytest_atom.replay.cassette`'s format constants;
- `reference/python-api.md` from `pytest_atom.__all__` (its `_GROUPS`) and each public module's
  `__all__` (`pytest_atom.PUBLIC_MODULES`).

The `atom` commands page is written by mkdocs-click from the click group itself.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # build from the checkout, as the tests import it
    sys.path.insert(0, str(ROOT))


# ------------------------------------------------------------------------------- spec format


def _type_of(schema: dict[str, Any]) -> str:
    """A short type for a schema node: `string`, `array of string`, `mapping` or a reference."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return " or ".join(_type_of(option) for option in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"array of {_type_of(schema.get('items', {}))}"
    if kind == "object":
        return "mapping"
    if "enum" in schema:
        return " / ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    return str(kind or "any")


def _cell(text: str) -> str:
    """Text for one table cell: on one line, its pipes escaped outside code spans only.

    Python-Markdown's tables never split on a pipe inside a code span, and show a backslash
    there literally: `FILE\\|SPEC` would reach the page with its backslash.
    """
    parts = re.split(r"(`[^`\n]*`)", text.replace("\n", " "))
    return "".join(
        part if part.startswith("`") and len(part) > 1 else part.replace("|", "\\|")
        for part in parts
    )


def _properties_table(node: dict[str, Any]) -> list[str]:
    required = set(node.get("required", []))
    rows = ["| key | type | default | what it is |", "| --- | --- | --- | --- |"]
    for key, value in node.get("properties", {}).items():
        default = f"`{json.dumps(value['default'])}`" if "default" in value else ""
        note = value.get("description", "")
        if key in required:
            note = "**Required.** " + note
        rows.append(f"| `{key}` | {_cell(_type_of(value))} | {_cell(default)} | {_cell(note)} |")
    return rows


def spec_schema_page() -> str:
    """Every key of a spec and of each nested part, from the JSON schema specs are validated by."""
    path = ROOT / "pytest_atom" / "spec" / "spec_schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    lines = [
        "# Spec schema",
        "",
        "Generated from `pytest_atom/spec/spec_schema.json`, which validates every spec: this "
        "page cannot drift from what the loader accepts. "
        "[Spec format](spec-format.md) shows the keys in an annotated example.",
        "",
        _cell(schema.get("description", "")),
        "",
        "A file holds one spec, or several under `specs:` (each then needs a `name`).",
        "",
        "## spec",
        "",
        *_properties_table(defs["spec"]),
        "",
    ]
    for name, node in defs.items():
        if name == "spec":
            continue
        lines += [f"## {name}", "", _cell(node.get("description", "")), ""]
        lines += [f"Type: {_cell(_type_of(node))}.", ""]
        if node.get("properties"):
            lines += [*_properties_table(node), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- pytest options


@dataclass
class OptionRow:
    """One pytest option or ini setting, as the reference lists it."""

    names: list[str]
    help: str
    metavar: str = ""
    choices: list[str] = field(default_factory=list)
    ini: bool = False


class _RecordingParser:
    """Stands in for pytest's parser: records what `pytest_addoption` registers, nothing more."""

    def __init__(self) -> None:
        self.rows: list[OptionRow] = []

    def getgroup(self, name: str, description: str = "", **_: Any) -> _RecordingParser:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        choices = [str(c) for c in kwargs.get("choices") or []]
        flag = kwargs.get("action") in ("store_true", "store_false", "count")
        metavar = kwargs.get("metavar") or ("" if flag or choices else "VALUE")
        self.rows.append(OptionRow(list(names), kwargs.get("help", ""), metavar, choices))

    def addini(self, name: str, help: str, type: Any = None, default: Any = None) -> None:
        self.rows.append(OptionRow([name], help, str(type or "string"), ini=True))


def option_rows() -> list[OptionRow]:
    """Every option and ini key pytest registers, read by calling the plugin's own
    `pytest_addoption` with a recording parser: what the option table does not hold
    (`--atom` itself) is found here, so no registered name goes undocumented."""
    from pytest_atom import plugin

    parser = _RecordingParser()
    plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    return parser.rows


def options_page() -> str:
    """The option table's own rendering (`pytest_atom.settings.options.options_markdown`), plus
    whatever pytest registers outside the table."""
    from pytest_atom.settings.options import options_markdown

    table = options_markdown()
    others = [
        row
        for row in option_rows()
        if not any(re.search(rf"`{re.escape(name)}`", table) for name in row.names)
    ]
    lines = [
        "# pytest options and ini settings",
        "",
        "Generated from the one option table, `pytest_atom.settings.options`, which also generates "
        "pytest's `--atom-*` options, their `atom_*` ini keys and `atom run`'s options: the "
        "same names, help, choices and value checks everywhere. How a value is chosen when "
        "several places set it (command line, mark, fixture, ini, `.atom/config.yaml`) is in "
        "[Settings](settings.md).",
        "",
    ]
    if others:
        lines += ["## Switches outside the table", "", "| option | what it does |", "| --- | --- |"]
        lines += [
            f"| {', '.join(f'`{n}`' for n in row.names)} | {_cell(row.help)} |" for row in others
        ]
        lines.append("")
    lines += ["## Every setting", "", table]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- exit statuses


def exit_statuses_page() -> str:
    import pytest

    from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT

    meaning = {
        pytest.ExitCode.OK: "every spec passed (an expected failure counts as passing); with "
        "`--atom-min-pass-rate`, every spec's pass rate reached the gate",
        pytest.ExitCode.TESTS_FAILED: "a spec failed, a baseline regression was found "
        "(`--atom-baseline`), or a pass rate fell below `--atom-min-pass-rate`",
        pytest.ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
        pytest.ExitCode.INTERNAL_ERROR: "an internal error",
        pytest.ExitCode.USAGE_ERROR: "a usage error: a bad option or setting",
        pytest.ExitCode.NO_TESTS_COLLECTED: "no specs or tests were collected",
    }
    lines = [
        "# Exit statuses",
        "",
        "Generated from pytest's `ExitCode` and pytest-atom's own constants.",
        "",
        "## `pytest --atom`",
        "",
        "| status | name | meaning |",
        "| --- | --- | --- |",
    ]
    for code in pytest.ExitCode:
        lines.append(f"| {int(code)} | `{code.name}` | {meaning.get(code, '')} |")
    lines += [
        "",
        f"When `--atom-max-cost-usd` stops a session, it ends with status {EXIT_SPENDING_LIMIT} "
        "(`pytest_atom.cost.spend.EXIT_SPENDING_LIMIT`, as `claude plugin eval --max-cost-usd` "
        "does), whatever else happened. A baseline regression ends it with 1 even when every "
        "spec passed; with `--atom-min-pass-rate`, the pass rates decide over single failed "
        "runs (a session whose only failures are repeats above the gate ends with 0).",
        "",
        "## `atom run`",
        "",
        "| status | meaning |",
        "| --- | --- |",
        "| 0 | every spec passed (or every pass rate reached `--min-pass-rate`) |",
        "| 1 | a spec failed, or a baseline regression |",
        "| 2 | the machinery failed (a harness error, a replay that diverged, an upstream that "
        f"never answered), so CI tells a broken set-up from a failing spec; also the spending "
        f"limit ({EXIT_SPENDING_LIMIT}) |",
        "| 130 | interrupted (as a shell reports SIGINT): never 1, which means a spec failed |",
        "",
        "A run's `Outcome.exit_status` (`pytest_atom.results.outcome`) is 0, 1 or 2 as above; "
        "`atom run` exits with the worst of its runs.",
        "",
        "Both front ends end a suite through one decision (`pytest_atom.suite.ending.decide`), "
        "its gates in one order: the spending limit, a failure of the machinery, a baseline regression, a "
        "trigger suite's `min_precision` and `min_recall` (its runs are then decided by them, "
        "not one by one: [Measure a skill's triggers](../how-to/triggers.md)), the "
        "minimum pass rate, then the front end's own status.",
        "",
        "## Other commands",
        "",
        "| command | status |",
        "| --- | --- |",
        "| `atom cassette check` | 0 clean; 1 findings or `*.partial.yaml` leftovers; 2 a cassette "
        "could not be read |",
        "| `atom cassette refresh`, `atom cassette stamp` | 1 when a cassette was refused |",
        "| `atom results combine` | the combined session's status, as `atom run`'s |",
        "| `atom tool NAME` | the tool's own exit status |",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- cassette format


def cassette_format_page() -> str:
    from pytest_atom.replay import cassette

    doc = (cassette.__doc__ or "").strip()
    return "\n".join(
        [
            "# Cassette format",
            "",
            "Generated from `pytest_atom.replay.cassette`.",
            "",
            f"- The file is vcrpy's YAML cassette, top-level `version: {cassette.VCR_VERSION}`: "
            "vcrpy and its tools load it.",
            f"- pytest-atom's layout inside it is `metadata.format: {cassette.FORMAT}`; this "
            f"release reads formats 1 to {cassette.FORMAT} and writes {cassette.FORMAT}.",
            f'- A reference to a shared block is `{{"{cassette.SHARED}": "<name>"}}`, the block '
            "sits under `metadata.shared`.",
            f"- `metadata.{cassette.RECALL}` holds the hashes that let a replay recall a "
            "reflector's verdict or a planner's plan ([The reflector](../explanation/reflector.md)).",
            f"- A broken stream kept as the CLI saw it carries the response header "
            f"`{cassette.FAULT_HEADER}`.",
            "",
            "## The module's own account",
            "",
            doc,
            "",
            "What each field of `metadata:` records, and how recording, normalization, drift and "
            "divergence work, is in [Recording and replay](../explanation/recording-and-replay.md).",
            "",
        ]
    )


# ------------------------------------------------------------------------------- Python API

_LEGACY_EXAMPLE = """\
```python
from pytest_atom import PromptLoader
from pytest_atom.legacy import AtomRuntime

runtime = AtomRuntime.create_ephemeral(PromptLoader().load(), max_iterations=5)
result = runtime.run("Review auth.py for security issues")
result["success"], result["iterations"], result["output"], result["reason"]
outcome = runtime.execute("...")   # the same, typed: RunOutcome(success=..., reason=...)
```
"""


def _summary(name: str, value: Any) -> str:
    """The first paragraph of a public name's docstring, on one line; a constant's value."""
    import inspect

    if not (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)):
        return f"`{value!r}`"
    doc = inspect.getdoc(value) or ""
    if inspect.isclass(value) and doc.startswith(f"{name}("):  # a dataclass's own signature
        doc = ""
    return " ".join(doc.split("\n\n")[0].split())


def _name_table(names: dict[str, Any]) -> list[str]:
    rows = ["| name | what it is |", "| --- | --- |"]
    rows += [f"| `{name}` | {_cell(_summary(name, value))} |" for name, value in names.items()]
    return rows


def _hook_lines() -> list[str]:
    """Each hook specification of `pytest_atom.hooks`: its call and its docstring."""
    import inspect

    from pytest_atom import hooks

    lines = ["### Hooks", ""]
    for name, fn in vars(hooks).items():
        if name.startswith("pytest_atom_") and inspect.isfunction(fn):
            params = ", ".join(inspect.signature(fn).parameters)
            lines += [f"`{name}({params})`", ": " + " ".join((fn.__doc__ or "").split()), ""]
    return lines


def _errors_tree() -> list[str]:
    """The tree drawn at the top of `pytest_atom.errors`, as a code block."""
    from pytest_atom import errors

    doc = errors.__doc__ or ""
    drawing = [line[4:] for line in doc.splitlines() if line.startswith("    ")]
    return ["```text", *drawing, "```", ""]


def _module_lines(name: str) -> list[str]:
    """One public module: the first paragraph of its docstring and a table of its `__all__`."""
    import importlib

    module = importlib.import_module(name)
    about = " ".join((module.__doc__ or "").split("\n\n")[0].split())
    lines = [f"### `{name}`", "", about, ""]
    if name == "pytest_atom.errors":
        lines += _errors_tree()
    return [*lines, *_name_table({n: getattr(module, n) for n in module.__all__}), ""]


def python_api_page() -> str:
    """The public API: `pytest_atom.__all__` by group, then each public module's `__all__`,
    then the legacy module; each name's docstring says what it is, so the page lists exactly
    what imports."""
    import pytest_atom
    import pytest_atom.legacy as legacy

    lines = [
        "# Python API",
        "",
        "Generated from the code: the public API is the names `pytest_atom.__all__` lists and "
        "the names each [public module](#public-modules)'s `__all__` lists. Everything else "
        "is private, and may change in any release. Each name loads on first use, so "
        "`import pytest_atom` is cheap. The atom loop's API from before specs is "
        "[legacy](#legacy).",
        "",
    ]
    for title, (about, names) in pytest_atom._GROUPS.items():
        lines += [f"## {title}", "", about, ""]
        lines += [*_name_table({n: getattr(pytest_atom, n) for n in names}), ""]
        if "hooks" in names:
            lines += _hook_lines()
    lines += [
        "## Public modules",
        "",
        "Import these names from their module (``from pytest_atom.errors import SpecError``).",
        "",
    ]
    for name in pytest_atom.PUBLIC_MODULES:
        if name not in ("pytest_atom.hooks", "pytest_atom.legacy"):  # above, and below
            lines += _module_lines(name)
    lines += ["## Legacy", "", " ".join((legacy.__doc__ or "").split()), "", _LEGACY_EXAMPLE]
    lines += [*_name_table({n: getattr(legacy, n) for n in legacy.__all__}), ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- the hooks

GENERATED: dict[str, Callable[[], str]] = {
    "reference/spec-schema.md": spec_schema_page,
    "reference/options.md": options_page,
    "reference/exit-statuses.md": exit_statuses_page,
    "reference/cassette-format.md": cassette_format_page,
    "reference/python-api.md": python_api_page,
}


def on_config(config: Any) -> Any:
    """Load the `atom` group's lazy subcommands, so mkdocs-click documents every one.

    `atom --help` imports a subcommand only when it runs; mkdocs-click reads the group's
    `commands` and would see only the eagerly defined ones.
    """
    import click

    from atom_cli.main import main

    ctx = click.Context(main, info_name="atom")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None:
            main.commands.setdefault(name, command)
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages as virtual files (never written into docs/)."""
    from mkdocs.structure.files import File

    for uri, render in GENERATED.items():
        files.append(File.generated(config, uri, content=render()))
    return files
