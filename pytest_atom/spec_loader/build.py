"""Schema-valid data -> `Spec`: what a schema cannot express (paths exist and stay
inside their folder, regexes compile, steps and limits make sense), with file and line."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pytest_atom.checks.kind import Entry
from pytest_atom.checks.kinds import KINDS
from pytest_atom.cost.limits import Limits, parse_limits
from pytest_atom.environment import pass_env_problem
from pytest_atom.errors import SpecError
from pytest_atom.extensions import declared
from pytest_atom.settings.interpolate import malformed
from pytest_atom.spec.claude import claude_options, reflector_options, sandbox_options
from pytest_atom.spec.confinement import inside_folder, outside_project, root_marker, spec_side
from pytest_atom.spec.document import Document
from pytest_atom.spec.env import reserved_env
from pytest_atom.spec.types import (
    BARE_TOOLS,
    USER_MODEL,
    AgentChoice,
    CalibrationFloor,
    Check,
    ClaudeOptions,
    Loc,
    Mark,
    PlanAccept,
    Spec,
    Step,
    UserSpec,
    steps_prompt,
)
from pytest_atom.spec.validation import label, regex, schema_with, validate


def check_schemas(plugin_kinds: Collection[str]) -> dict[str, dict[str, Any]]:
    """Each check kind's name and the JSON schema of its value: the installed kinds' own,
    then the kinds a ``pytest_atom_register_checks`` hook added, as ``customCheck``."""
    schemas = {kind.name: dict(kind.schema) for kind in KINDS.values()}
    for name in sorted(set(plugin_kinds) - set(schemas)):
        schemas[name] = {"$ref": "#/$defs/customCheck"}
    return schemas


def trigger_kind(component: str) -> str:
    """The built-in check kind whose ``triggers`` names a trigger suite's component."""
    return next(k.name for k in KINDS.values() if component in getattr(k, "triggers", ()))


def _setup(value: list[str] | dict[str, Any]) -> dict[str, Any]:
    """`setup:` as a list of commands, or `{run: [...], inputs: [...], cache: bool}`."""
    if isinstance(value, dict):
        return {
            "setup": tuple(value.get("run", [])),
            "setup_inputs": tuple(value.get("inputs", [])),
            "setup_cache": bool(value.get("cache", True)),
        }
    return {"setup": tuple(value)}


def build_spec(doc: Document, loc: Loc, m: dict[str, Any], name: str) -> Spec:
    kw: dict[str, Any] = {k: m[k] for k in ("description", "toolname", "xfail", "model") if k in m}
    kw.update(_workspace(doc, loc, m))
    kw.update(_setup(m.get("setup", [])))
    kw["include"] = tuple(
        inside_folder(doc, loc + ("include", i), glob, "the workspace")
        for i, glob in enumerate(m.get("include", []))
    )
    kw["env"] = _env(doc, loc + ("env",), m.get("env") or {})
    kw["pass_env"] = _pass_env(doc, loc + ("pass_env",), m.get("pass_env") or [])
    kw.update(_marks_and_xfail(doc, loc, m))
    if "max_iterations" in m:
        kw["max_iterations"] = int(m["max_iterations"])
    if "attempts" in m:
        kw["attempts"] = int(m["attempts"])
    kw.update(_repeats(doc, loc, m))
    kw.update(_limits(doc, loc, m))
    for key, want in (("script", "file"), ("oracle", "file"), ("cassette", None)):
        if m.get(key) is not None:
            kw[key] = spec_side(doc, loc + (key,), m[key], want)
    kw["accept"] = tuple(
        _check(doc, loc + ("accept", i), entry) for i, entry in enumerate(m.get("accept", []))
    )
    kw["criteria"], kw["criteria_floors"] = _criteria(doc, loc + ("criteria",), m)
    if "claude" in m:
        kw["claude"] = claude_options(doc, loc + ("claude",), m["claude"], kw.get("workspace"))
        if kw["claude"].bare:
            _check_bare_tools(doc, loc + ("claude", "allowed_tools"), kw["claude"].allowed_tools)
    if "sandbox" in m:
        kw["sandbox"] = sandbox_options(m["sandbox"])
    if "cache" in m:
        kw["cache_trust"] = tuple(dict.fromkeys(m["cache"].get("trust", [])))
    if m.get("agent") is not None:
        kw["agent"] = _agent(doc, loc, m)
    if "reflector" in m:
        kw["reflector"] = reflector_options(doc, loc + ("reflector",), m["reflector"])
    kw["tools"] = tuple(m.get("tools", []))
    kw["snapshot"] = tuple(
        inside_folder(doc, loc + ("snapshot", i), rel, "the workspace")
        for i, rel in enumerate(m.get("snapshot", []))
    )
    if kw.get("claude", ClaudeOptions()).bare:
        _check_bare_tools_of_checks(doc, loc, m)
    kw.update(_task(doc, loc, m))
    kw.update({k: m[k] for k in ("session", "max_rollbacks") if k in m})
    kw.update(_user(doc, loc + ("user",), m))
    return Spec(name=name, path=doc.path, line=doc.line(loc), raw=m, **kw)


def _user(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, UserSpec]:
    """`user:`: a model user needs a goal to say when it is done; a scripted one has no
    model to play a persona with."""
    if "user" not in m:
        return {}
    value = m["user"]
    if "steps" in m or "request" in m:
        raise doc.error(
            "'user:' makes the prompt a conversation, which 'steps:' and 'request:' do not "
            "have: keep one of them",
            loc,
            key=True,
        )
    script = tuple(value.get("script", ()))
    if script:
        extra = next((k for k in ("persona", "goal", "model") if k in value), None)
        if extra:
            raise doc.error(
                f"'{extra}' is for a user a model plays; with 'script:' the user's messages "
                "are the script's: drop one of them",
                loc + (extra,),
                key=True,
            )
    elif not value.get("goal"):
        raise doc.error(
            "a simulated user needs a 'goal:' (it says it is done when the goal is met), or "
            "give the user's messages as 'script:'",
            loc,
            key=True,
        )
    user = UserSpec(
        persona=value.get("persona", ""),
        goal=value.get("goal", ""),
        max_turns=int(value.get("max_turns", len(script) + 1 if script else 5)),
        model=value.get("model", USER_MODEL),
        script=script,
        answers=tuple(value.get("answers", ())),
    )
    return {"user": user}


def _repeats(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`repeats:` and `pass_at_least:`: the count of passes needs the count of runs beside
    it, and cannot exceed it."""
    kw: dict[str, Any] = {key: int(m[key]) for key in ("repeats", "pass_at_least") if key in m}
    needed, runs = kw.get("pass_at_least"), kw.get("repeats")
    if needed is not None and runs is None:
        raise doc.error(
            f"'pass_at_least: {needed}' counts passes of the spec's repeats, which it does not "
            f"set: add 'repeats: N' (N >= {needed}) beside it",
            loc + ("pass_at_least",),
            key=True,
        )
    if needed is not None and runs is not None and needed > runs:
        raise doc.error(
            f"'pass_at_least: {needed}' asks for more passes than the spec's {runs} repeats "
            f"can give: lower it to at most {runs}, or raise 'repeats' to {needed} or more",
            loc + ("pass_at_least",),
            key=True,
        )
    return kw


def _marks_and_xfail(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`marks:` without its xfail, which becomes Spec.xfail: one place for the expected
    failure, whichever key set it."""
    kw: dict[str, Any] = {}
    marks = _marks(doc, loc + ("marks",), m.get("marks", []))
    xfails = [mark for mark in marks if mark.name == "xfail"]
    if xfails and m.get("xfail") is not None:
        raise doc.error(
            "the spec sets both 'xfail' and an xfail in 'marks': keep one (they mean the same)",
            loc + ("marks",),
            key=True,
        )
    if xfails:
        kw["xfail"] = xfails[0].reason
    kw["marks"] = tuple(mark for mark in marks if mark.name != "xfail")
    return kw


def _agent(doc: Document, loc: Loc, m: dict[str, Any]) -> AgentChoice | None:
    """`agent: {KIND: VALUE}`: an installed agent kind (read without importing one);
    ``claude-code`` is the default (None)."""
    from pytest_atom.agents.protocol import DEFAULT_KIND, GROUP, agent_kind

    [(kind, value)] = m["agent"].items()
    installed = [point.name for point in declared(GROUP)]
    if kind not in installed:
        raise doc.error(
            f"no agent kind '{kind}' is installed: 'agent:' takes one of {', '.join(installed)}",
            loc + ("agent", kind),
            key=True,
        )
    if kind == DEFAULT_KIND:
        return None
    other = next((key for key in ("steps", "request") if key in m), None)
    if other is not None:  # it runs its own loop once; steps resume a CLI session
        raise doc.error(
            f"{agent_kind(kind).noun} ('agent: {{{kind}: ...}}') runs one task with 'prompt:', "
            f"not '{other}:'; write one spec per step, or drop 'agent:' to let Claude Code "
            "run the steps",
            loc + ("agent",),
            key=True,
        )
    return AgentChoice(kind, value)


#: The most characters a prompt may hold: about 250,000 tokens, more than a 200,000-token
#: context window, so a longer prompt is refused when the spec loads.
PROMPT_LIMIT = 1_000_000


def _prompt_size(doc: Document, loc: Loc, text: str) -> None:
    if len(text) > PROMPT_LIMIT:
        raise doc.error(
            f"'{loc[-1]}' holds {len(text):,} characters, over the limit of {PROMPT_LIMIT:,} "
            "(about 250,000 tokens, more than a Claude model's context window holds): put "
            "the long text in a workspace file and tell the agent to read it",
            loc,
        )


def _task(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """The prompt, from `prompt:`, the `steps:` or a planner's `request:`."""
    for key in ("prompt", "request"):
        if isinstance(m.get(key), str):
            _prompt_size(doc, loc + (key,), m[key])
    for i, step in enumerate(m.get("steps") or ()):
        _prompt_size(doc, loc + ("steps", i, "prompt"), step["prompt"])
    if "steps" in m:
        steps = _steps(doc, loc + ("steps",), m["steps"])
        return {"steps": steps, "prompt": steps_prompt(steps)}
    if "request" in m:
        kw: dict[str, Any] = {"prompt": m["request"], "request": m["request"]}
        if "plan_accept" in m:
            kw["plan_accept"] = _plan_accept(doc, loc + ("plan_accept",), m["plan_accept"])
        return kw
    return {"prompt": m["prompt"]}


def _workspace(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`workspace:`, a folder or ``{path, ref, exclude}``: any folder inside the project."""
    value = m.get("workspace")
    if value is None:
        return {}
    at = loc + ("workspace",)
    kw: dict[str, Any] = {}
    if isinstance(value, dict):
        kw["workspace_ref"] = value.get("ref")
        kw["workspace_exclude"] = tuple(value.get("exclude", []))
        value, at = value["path"], at + ("path",)
    if os.path.isabs(value):
        raise doc.error(
            f"{label(at)!r} must be a path relative to the spec file's folder, got {value!r}",
            at,
        )
    path = (doc.path.parent / value).resolve()
    root = outside_project(path, doc.path.parent)
    if root is not None:
        raise doc.error(
            f"{label(at)!r} {value!r} leads outside the project ({root}, the folder of its "
            f"{root_marker(root)}): name a folder inside it, such as '.' for the spec's "
            "own folder",
            at,
        )
    if not path.is_dir():
        state = "is not a folder" if path.exists() else "does not exist"
        raise doc.error(f"{label(at)!r} folder {value!r} {state} (looked for {path})", at)
    kw["workspace"] = path
    return kw


def _env(doc: Document, loc: Loc, mapping: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in mapping.items():
        if reserved_env(name):
            raise doc.error(
                f"env {name} is set by pytest-atom for every session (the gateway, the CLI's "
                "own config and home, credentials), and the harness's value always wins: "
                f"remove {name} from 'env'",
                loc + (name,),
                key=True,
            )
        text = value if isinstance(value, str) else json.dumps(value)
        if malformed(text) is not None:
            raise doc.error(
                f"env {name}: {text!r} has a '${{' that is not ${{NAME}} or ${{NAME:-default}} "
                "(write $$ for a literal $)",
                loc + (name,),
            )
        out[name] = text
    return out


def _pass_env(doc: Document, loc: Loc, entries: list[str]) -> tuple[str, ...]:
    for i, entry in enumerate(entries):
        problem = pass_env_problem(entry)
        if problem:
            raise doc.error(f"pass_env: {problem}", loc + (i,))
    return tuple(entries)


def _marks(doc: Document, loc: Loc, entries: list[Any]) -> list[Mark]:
    marks: list[Mark] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            if entry in ("skip", "skipif", "xfail"):
                raise doc.error(
                    f"mark {entry!r} needs a reason: write {{{entry}: REASON}}"
                    if entry != "skipif"
                    else "mark 'skipif' needs a condition and a reason: "
                    "{skipif: {condition: \"sys.platform == 'win32'\", reason: REASON}}",
                    loc + (i,),
                )
            marks.append(Mark(entry))
            continue
        ((name, value),) = entry.items()
        if name == "skipif":
            marks.append(Mark(name, value["reason"], value["condition"]))
        else:
            marks.append(Mark(name, value))
    return marks


def _steps(doc: Document, loc: Loc, entries: list[dict[str, Any]]) -> tuple[Step, ...]:
    """The steps, each with its own checks and limits; ids are unique within the spec."""
    steps: list[Step] = []
    for i, m in enumerate(entries):
        at = loc + (i,)
        first = next((s for s in steps if s.id == m["id"]), None)
        if first is not None:
            raise doc.error(
                f"duplicate step id {m['id']!r} (first used on line {first.line}): "
                "step ids must be unique within a spec, rename one",
                at + ("id",),
            )
        limits = _limits(doc, at, m).get("limits") if "limits" in m else None
        criteria, floors = _criteria(doc, at + ("criteria",), m)
        steps.append(
            Step(
                id=m["id"],
                prompt=m["prompt"],
                line=doc.line(at),
                description=m.get("description", ""),
                accept=tuple(
                    _check(doc, at + ("accept", j), e) for j, e in enumerate(m.get("accept", []))
                ),
                criteria=criteria,
                criteria_floors=floors,
                attempts=int(m["attempts"]) if "attempts" in m else None,
                limits=limits if limits is not None else (Limits() if "limits" in m else None),
            )
        )
    return tuple(steps)


def _criteria(
    doc: Document, loc: Loc, m: dict[str, Any]
) -> tuple[tuple[str, ...], dict[str, CalibrationFloor]]:
    """`criteria:`: the texts (a string, or a mapping's `text`) and, by text, the floors of
    those with `min_kappa` or `min_samples`; a text written twice with a floor is refused."""
    texts: list[str] = []
    floors: dict[str, CalibrationFloor] = {}
    for i, entry in enumerate(m.get("criteria", [])):
        if isinstance(entry, str):
            texts.append(entry)
            continue
        text = entry["text"]
        if text in texts and (text in floors or {"min_kappa", "min_samples"} & set(entry)):
            raise doc.error(
                f"criterion {text!r} is listed twice (first as criteria[{texts.index(text)}]): "
                "write it once, with its min_kappa and min_samples",
                loc + (i,),
            )
        texts.append(text)
        if {"min_kappa", "min_samples"} & set(entry):
            kappa = entry.get("min_kappa")
            floors[text] = CalibrationFloor(
                None if kappa is None else float(kappa),
                entry.get("min_samples"),
                doc.line(loc + (i,)),
            )
    return tuple(texts), floors


def _plan_accept(doc: Document, loc: Loc, m: dict[str, Any]) -> PlanAccept:
    accept = PlanAccept(**m)
    if accept.has_step is not None:
        regex(doc, loc + ("has_step",), accept.has_step)
    if accept.min_steps and accept.max_steps and accept.min_steps > accept.max_steps:
        raise doc.error(
            f"'plan_accept' asks for min_steps {accept.min_steps} > max_steps "
            f"{accept.max_steps}: no plan could pass, lower min_steps or raise max_steps",
            loc + ("min_steps",),
        )
    return accept


def planned_steps(
    text: str, origin: Path, *, check_kinds: Collection[str] = ()
) -> tuple[Step, ...]:
    """A planner's steps (`text`: JSON ``{"steps": [...]}``, saved at `origin`), checked
    exactly like a spec's ``steps:``; SpecError names `origin` and the line at fault."""
    schema = schema_with(check_schemas(check_kinds))
    doc = Document(origin, text)
    if not isinstance(doc.data, dict) or set(doc.data) != {"steps"}:
        raise SpecError("a plan is a JSON object with one key, 'steps'", origin)
    validate(doc, schema)  # `{"steps": [...]}` is itself a spec, so the spec schema fits
    return _steps(doc, ("steps",), doc.data["steps"])


def _limits(doc: Document, loc: Loc, m: dict[str, Any]) -> dict[str, Any]:
    """`limits:` and the top-level `timeout` (``limits.timeout`` wins over it)."""
    limits = {k: v for k, v in (m.get("limits") or {}).items() if v is not None}
    if m.get("timeout") is not None:
        limits.setdefault("timeout", m["timeout"])
    try:  # the schema checked types and ranges; this catches what it lets by (NaN)
        kw: dict[str, Any] = {"limits": parse_limits(limits)} if limits else {}
    except ValueError as exc:
        where = loc + ("limits",) if "limits" in m else loc + ("timeout",)
        raise doc.error(str(exc), where) from None
    if "timeout" in limits:
        kw["timeout"] = float(limits["timeout"])
    tolerance = (m.get("baseline") or {}).get("tolerance")
    if tolerance:
        kw["baseline_tolerance"] = dict(tolerance)
    return kw


def _check_bare_tools(doc: Document, loc: Loc, allowed: tuple[str, ...]) -> None:
    """A tool `--bare` cannot offer would fail every call with "No such tool available"."""
    for i, rule in enumerate(allowed):
        name = rule.split("(", 1)[0].strip()
        if name not in BARE_TOOLS and not name.startswith("mcp__"):
            raise doc.error(
                f"{label(loc + (i,))!r} allows {name}, which `bare: true` cannot offer "
                f"(Claude Code's --bare mode has only {', '.join(BARE_TOOLS)}): remove {name} "
                "or drop `bare: true`",
                loc + (i,),
            )


def _check_bare_tools_of_checks(doc: Document, loc: Loc, m: dict[str, Any]) -> None:
    """A check whose kind needs a tool `bare: true` does not offer could never pass."""
    lists = [(loc + ("accept",), m.get("accept") or [])] + [
        (loc + ("steps", i, "accept"), step.get("accept") or [])
        for i, step in enumerate(m.get("steps") or [])
    ]
    for at, entries in lists:
        for i, entry in enumerate(entries):
            name: str = next(iter(entry), "")
            kind = KINDS.get(name)
            if kind is not None and kind.needs_tool is not None:
                raise doc.error(
                    f"{name} needs the {kind.needs_tool} tool, which `bare: true` "
                    f"does not offer (Claude Code's --bare has only {', '.join(BARE_TOOLS)}): "
                    "remove the check or drop `bare: true`",
                    at + (i, name),
                )


def _check(doc: Document, loc: Loc, entry: dict[str, Any]) -> Check:
    """One ``accept:`` entry, built through its kind; a plugin's kind's value is its params."""
    ((name, value),) = entry.items()
    kind = KINDS.get(name)
    if kind is None:
        custom = dict(value) if isinstance(value, dict) else {"value": value}
        return Check(kind=name, params=custom, line=doc.line(loc))
    params = kind.build(Entry(doc, loc + (name,)), value)
    return Check(name, params, doc.line(loc), label=kind.describe(params))
