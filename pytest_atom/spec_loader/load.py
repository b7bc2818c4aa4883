"""Load and validate ``*.atom.yaml`` spec files: the entry points, specs, cases and arms.

Specs are written by hand, so every error says where the problem is: the YAML is composed
into nodes (`spec.document`) and JSON-schema errors are mapped back onto them
(`spec.validation`); `build` adds what a schema cannot express. Check kinds registered by
plugins are passed in as ``check_kinds`` and added to the schema by name.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.datasets.cases import Case
from pytest_atom.datasets.expand import case_view, expand_cases, read_spec_cases, templated_part
from pytest_atom.errors import SpecError
from pytest_atom.paths import SPEC_SUFFIX, default_spec_name
from pytest_atom.spec.document import Document, show_value
from pytest_atom.spec.types import TRIGGER_COMPONENTS, Check, Loc, Spec, Trigger
from pytest_atom.spec.validation import Schema, schema_with, validate
from pytest_atom.spec.workspaces import WORKSPACES_DIR, declared_workspaces
from pytest_atom.spec_loader.build import build_spec, check_schemas, trigger_kind


def load_specs(path: str | os.PathLike[str], *, check_kinds: Collection[str] = ()) -> list[Spec]:
    """Every spec of one file, in file order; SpecError on the first problem (all of a
    document's schema errors at once, the others in its `more`). ``check_kinds``: plugins'
    kinds, whose ``accept`` entry holds a mapping (its params) or a scalar ``x`` (``{"value": x}``)."""
    file = Path(path).resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("spec file not found", file) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"spec file is not UTF-8 text ({exc.reason} at byte {exc.start})", file
        ) from None
    except OSError as exc:
        raise SpecError(f"cannot read spec file ({exc.strerror})", file) from None
    return parse_specs(file, text, check_kinds=check_kinds)


def parse_specs(file: Path, text: str, *, check_kinds: Collection[str] = ()) -> list[Spec]:
    """Every spec of `text`, read as if it were the spec file `file` (absolute): `load_specs`
    without the reading, for specs another format is translated into."""
    if isinstance(check_kinds, str):
        raise TypeError("check_kinds must be a collection of kind names, not one string")
    schema = schema_with(check_schemas(check_kinds))
    doc = Document(file, text)
    if doc.data is None:
        raise SpecError("spec file is empty; a spec needs at least a 'prompt'", file)
    if not isinstance(doc.data, dict):
        raise doc.error(
            "the top level must be a mapping (one spec) or 'specs:' with a list "
            f"of specs, got {show_value(doc.data)}",
            (),
        )
    validate(doc, schema)
    if "specs" in doc.data:
        entries: list[tuple[Loc, dict[str, Any]]] = [
            (("specs", i), m) for i, m in enumerate(doc.data["specs"])
        ]
    else:
        entries = [((), doc.data)]
    default_name = default_spec_name(file)
    specs: list[Spec] = []
    for loc, mapping in entries:
        name = mapping.get("name", default_name)
        first = next((s for s in specs if s.base_name == name), None)
        if first is not None:
            raise doc.error(
                f"duplicate spec name {name!r} (first used on line {first.line})", loc + ("name",)
            )
        if "triggers" in mapping:
            specs += _triggers(doc, schema, loc, mapping, name)
        elif "cases" in mapping:
            specs += _cases(doc, schema, loc, mapping, name)
        elif "arms" in mapping:
            specs += _arms(doc, schema, loc, mapping, name)
        else:
            specs.append(build_spec(doc, loc, mapping, name))
    return specs


def merge_overlay(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`overlay` over `base` as JSON Merge Patch (RFC 7386): mappings merge key by key, any
    other value (a list too) replaces, null removes the key."""
    out = dict(base)
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_overlay(out[key], value)
        else:
            out[key] = value
    return out


def _cases(
    doc: Document,
    schema: Schema,
    loc: Loc,
    m: dict[str, Any],
    name: str,
    cases: list[Case] | None = None,
    free: Collection[str] = (),
) -> list[Spec]:
    """One Spec per case (and arm), named ``name[case id]`` (``name[case id][arm]``): the
    spec's mapping rendered with the case's variables, then validated and built as any
    spec. An inline case's item points at the case's line."""
    specs = []
    for rendered in expand_cases(doc, loc, m, schema, cases, free):
        case = rendered.case
        mapping = rendered.mapping  # a case's `repeats`/`pass_at_least` are its keys now
        view = case_view(doc, loc, mapping)
        if "arms" in mapping:
            built = _arms(view, schema, loc, mapping, f"{name}[{case.id}]")
        else:
            # The spec as written was validated: only its templated fields can have changed.
            if rendered.recheck:
                validate(case_view(doc, loc, templated_part(mapping)), schema)
            built = [build_spec(view, loc, mapping, f"{name}[{case.id}]")]
        inline = case.origin.path == doc.path and case.origin.line is not None
        for spec in built:
            written = _written_criteria(m)
            if len(written) != len(spec.criteria):  # an arm wrote criteria of its own
                written = ()
            line = case.origin.line if inline and spec.arm is None else spec.line
            specs.append(
                dataclasses.replace(
                    spec,
                    case=case.id,
                    case_vars=dict(case.variables),
                    criteria_written=written,
                    line=line or spec.line,
                )
            )
    return specs


#: How a prompt's `trigger` value is written: YAML's booleans, or a CSV cell's words.
_LABELS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _triggers(doc: Document, schema: Schema, loc: Loc, m: dict[str, Any], name: str) -> list[Spec]:
    """A trigger suite (`triggers:`, docs/how-to/triggers.md): one spec per prompt, whose
    check sees the component fire (or stay silent); one attempt of one iteration unless the
    spec says more, as a trial is the agent's first answer."""
    at = loc + ("triggers",)
    given = m["triggers"]
    if "cases" in m:
        raise doc.error(
            "a trigger suite's prompts are its cases: move the rows of 'cases:' into "
            "'triggers: {prompts: ...}' (with a 'trigger' column)",
            loc + ("cases",),
            key=True,
        )
    component = next(k for k in TRIGGER_COMPONENTS if k in given)
    labels: dict[str, bool] = {}
    cases = []
    for case in read_spec_cases(doc, at + ("prompts",), given["prompts"]):
        variables = dict(case.variables)
        label = str(variables.get("trigger", "")).strip().lower()
        if label not in _LABELS:
            raise case.origin.error(
                f"prompt {case.id!r} needs 'trigger': true if it should fire the "
                f"{component}, false if it should not (yes or no in a CSV), got {label!r}"
            )
        if not isinstance(variables.get("prompt"), str) or not variables["prompt"].strip():
            raise case.origin.error(f"prompt {case.id!r} needs a 'prompt': the task text")
        labels[case.id] = _LABELS[label]
        variables["trigger"] = "yes" if labels[case.id] else "no"  # as `{{ trigger }}` renders
        cases.append(dataclasses.replace(case, variables=variables))
    if len(set(labels.values())) < 2:
        missing = "should not" if all(labels.values()) else "should"
        raise doc.error(
            f"the prompts hold none that {missing} fire the {component}: precision and "
            "recall need prompts of both kinds (trigger: true and trigger: false)",
            at + ("prompts",),
        )
    base = {k: v for k, v in m.items() if k != "triggers"}
    base = {"prompt": "{{ prompt }}", "attempts": 1, "max_iterations": 1, **base}
    kind = trigger_kind(component)
    specs = []
    for spec in _cases(doc, schema, loc, base, name, cases, free=("trigger",)):
        should = labels[str(spec.case)]
        params = {"name": given[component], **({} if should else {"negated": True})}
        label = f"{kind} {given[component]}" if should else f"not {kind} {given[component]}"
        check = Check(kind, params, doc.line(at), label=label)
        trigger = Trigger(
            component,
            given[component],
            should,
            check,
            given.get("min_precision"),
            given.get("min_recall"),
        )
        specs.append(dataclasses.replace(spec, accept=(*spec.accept, check), trigger=trigger))
    return specs


def _written_criteria(m: dict[str, Any]) -> tuple[str, ...]:
    """The criteria's words as written (a string, or a mapping's `text`), unrendered."""
    return tuple(e if isinstance(e, str) else str(e["text"]) for e in m.get("criteria", []))


def _arms(doc: Document, schema: Schema, loc: Loc, m: dict[str, Any], name: str) -> list[Spec]:
    """One Spec per arm: the arm's overlay merged over the spec's keys, then validated and
    built as any spec (errors name the arm's own lines where its keys set them). An arm
    keeps its own cassette, ``<name>@<arm>.yaml``, unless it sets `cassette:`."""
    arms: dict[str, dict[str, Any]] = m["arms"]
    marked = [arm for arm, overlay in arms.items() if overlay.get("reference") is True]
    named = m.get("reference_arm")
    if named is not None and named not in arms:
        close = difflib.get_close_matches(named, list(arms), n=1, cutoff=0.6)
        raise doc.error(
            f"'reference_arm' {named!r} is not one of the arms ({', '.join(arms)})",
            loc + ("reference_arm",),
            suggestion=close[0] if close else None,
        )
    if len({*marked, *([named] if named else [])}) > 1:
        raise doc.error(
            f"more than one reference arm ({', '.join(dict.fromkeys([*marked, named or '']))}"
            "): mark one, with reference: true or reference_arm",
            loc + ("arms", marked[-1], "reference"),
            key=True,
        )
    reference = named or (marked[0] if marked else next(iter(arms)))
    base = {k: v for k, v in m.items() if k not in ("arms", "reference_arm")}
    specs = []
    for arm, overlay in arms.items():
        at = loc + ("arms", arm)
        own = {k: v for k, v in overlay.items() if k != "reference"}
        for key in ("name", "arms", "reference_arm"):
            if key in own:
                raise doc.error(
                    f"an arm cannot set {key!r}: it belongs to the spec", at + (key,), key=True
                )
        merged = merge_overlay(base, own)
        view = doc.arm_view(loc, at, merged)
        validate(view, schema)
        spec = build_spec(view, loc, merged, f"{name}[{arm}]")
        cassette = spec.cassette
        if cassette is not None and "cassette" not in own:
            cassette = cassette.with_name(f"{cassette.stem}@{arm}{cassette.suffix}")
        specs.append(
            dataclasses.replace(
                spec,
                arm=arm,
                arm_reference=arm == reference,
                line=doc.keys[at].start_mark.line + 1,  # the arm's name: its item's line
                cassette=cassette,
            )
        )
    return specs


def load_spec(
    path: str | os.PathLike[str], name: str | None = None, *, check_kinds: Collection[str] = ()
) -> Spec:
    """The only spec of a file, or the one called ``name``; ``check_kinds`` as for load_specs."""
    specs = load_specs(path, check_kinds=check_kinds)
    names = [s.name for s in specs]
    if name is None:
        if len(specs) == 1:
            return specs[0]
        raise SpecError(
            f"the file holds {len(specs)} specs ({', '.join(names)}); choose one by name",
            specs[0].path,
        )
    for spec in specs:
        if spec.name == name:
            return spec
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    raise SpecError(
        f"no spec named {name!r} (specs here: {', '.join(names)})",
        specs[0].path,
        suggestion=close[0] if close else None,
    )


_SKIP_DIRS = {"node_modules", "__pycache__", "venv", "build", "dist"}


def load_files(files: Iterable[Path], kinds: Iterable[str] = ()) -> list[Spec]:
    """The specs in `files` (`kinds`: the project's own check kinds), in order."""
    known = tuple(kinds)
    return [spec for file in files for spec in load_specs(file, check_kinds=known)]


def spec_files(paths: Sequence[Path]) -> list[Path]:
    """The spec files named or found below the folders named, each once, in order."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            found.update(dict.fromkeys(_walk(path.resolve())))
        else:
            found[path.resolve()] = None
    return list(found)


def _walk(folder: Path) -> Iterator[Path]:
    """Spec files below `folder`, skipping hidden folders and spec workspaces (fixture data)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        workspaces = declared_workspaces(here)
        specs_here = any(f.endswith(SPEC_SUFFIX) for f in filenames)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and (here / d) not in workspaces
            and not (specs_here and d == WORKSPACES_DIR)
        )
        yield from (here / f for f in sorted(filenames) if f.endswith(SPEC_SUFFIX))
