"""What a spec is: the values a loaded ``*.atom.yaml`` becomes (`pytest_atom.spec_loader`
builds them). ``spec_schema.json`` is the single source of truth for keys, types and
defaults; its check kinds' part is written from the kinds (`pytest_atom.checks.kinds`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_atom.cost.limits import Limits

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig

SPEC_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).with_name("spec_schema.json").read_text(encoding="utf-8")
)
DEFS: dict[str, Any] = SPEC_SCHEMA["$defs"]
_DESCRIBE_LIMIT = 100  # characters of a custom check's params shown by Check.describe()

Loc = tuple[str | int, ...]  # where a value sits in the document, e.g. ("specs", 0, "prompt")


@dataclass(frozen=True)
class Check:
    """One deterministic acceptance check; ``params`` normalized by its kind."""

    kind: str
    params: Mapping[str, Any] = field(hash=False)
    line: int
    #: The label its kind gave it (`CheckKind.describe`), if any.
    label: str | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """A short label for reports, so a person recognises the entry in their spec."""
        if self.label is not None:
            return self.label
        text = json.dumps(dict(self.params), ensure_ascii=False, separators=(",", ":"), default=str)
        if len(text) > _DESCRIBE_LIMIT:
            text = text[: _DESCRIBE_LIMIT - 1] + "…"
        return f"{self.kind} {text}"


#: The only tools Claude Code's ``--bare`` mode offers, whatever ``--allowedTools`` says.
BARE_TOOLS: tuple[str, ...] = ("Bash", "Edit", "Read")


@dataclass(frozen=True)
class ClaudeOptions:
    """Extra Claude Code CLI options; defaults mirror ``spec_schema.json``. Grep and Glob are
    allowed by default: the CLI's native builds offer them only when asked for."""

    permission_mode: str = "acceptEdits"
    allowed_tools: tuple[str, ...] = ("Bash", "Edit", "Read", "Write", "Grep", "Glob")
    bare: bool = False
    args: tuple[str, ...] = ()
    #: The configuration under test (`agents.claude_code.configuration`); paths absolute.
    claude_md: str | None = None
    claude_md_file: Path | None = None
    skills: tuple[Path, ...] = ()
    agents: tuple[Path, ...] = ()
    settings: Mapping[str, Any] | None = field(default=None, hash=False)
    hooks: Mapping[str, Any] | None = field(default=None, hash=False)
    mcp_servers: Mapping[str, Mapping[str, Any]] | None = field(default=None, hash=False)
    plugins: tuple[Path, ...] = ()


@dataclass(frozen=True)
class AgentChoice:
    """`agent: {KIND: VALUE}`: the executor is the installed agent kind `kind`, given
    `value` (``{sdk: "package.module:function"}``: a Claude Agent SDK app)."""

    kind: str
    value: Any = field(hash=False)


@dataclass(frozen=True)
class SandboxOptions:
    """What a spec lets its agent reach beyond its attempt folder, inside Claude Code's sandbox."""

    network: tuple[str, ...] = ()  # domains the sandbox's proxy lets through (``*.x.com`` too)
    write: tuple[str, ...] = ()  # extra writable paths, relative to the attempt folder


@dataclass(frozen=True)
class ReflectorOptions:
    """How the reflector judges a run; defaults mirror ``spec_schema.json``."""

    threshold: float = 0.8
    model: str | None = None
    threshold_set: bool = False  # the spec set `threshold`: only then it beats atom_threshold
    votes: int = 1  # sessions per judgement, by majority per criterion (odd: no ties)
    #: ``score``: the score passes above the threshold; ``criteria``: each criterion's votes.
    gate: Literal["score", "criteria"] = "score"

    def threshold_or(self, default: float) -> float:
        """The spec's threshold when it set one, else `default` (``--atom-threshold``)."""
        return self.threshold if self.threshold_set else default


#: A simulated user's model when `user:` names none: a small one (a Claude Code alias).
USER_MODEL = "haiku"


@dataclass(frozen=True)
class UserSpec:
    """`user:`: who talks to the agent after the prompt (docs/reference/spec-format.md): its
    `script` messages, else `model` playing `persona` after `goal`; done when it says so or
    after `max_turns` messages, the prompt included. `answers` answer the agent's
    `AskUserQuestion` questions, in order, when no model plays the user."""

    persona: str = ""
    goal: str = ""
    max_turns: int = 5
    model: str = USER_MODEL
    script: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()

    @property
    def simulated(self) -> bool:
        return not self.script


@dataclass(frozen=True)
class CalibrationFloor:
    """What a criterion written as a mapping (`{text, min_kappa, min_samples}`) asks of the
    judge's calibration before its verdict may fail a run (judge.trust). None: `min_kappa`
    from ``--atom-require-calibration`` (unset: any κ), `min_samples` `DEFAULT_MIN_SAMPLES`."""

    min_kappa: float | None = None
    min_samples: int | None = None
    line: int = 0  # where the spec wrote it (0: from the settings alone)

    def over(self, kappa: float | None) -> CalibrationFloor:
        """This floor with the settings' κ where it names none: the criterion's own wins."""
        return self if self.min_kappa is not None else replace(self, min_kappa=kappa)


#: The fewest labelled samples a calibration needs when a floor names none.
DEFAULT_MIN_SAMPLES = 1


@dataclass(frozen=True)
class Mark:
    """One `marks:` entry: a pytest mark's name and its arguments."""

    name: str
    reason: str | None = None
    condition: str | None = None  # skipif's, evaluated by pytest as for its own marks


STEP_ID = r"^[a-z][a-z0-9_]{0,47}$"


@dataclass(frozen=True)
class Step:
    """One step of a multi-step spec; unset ``attempts`` and ``limits`` are the spec's."""

    id: str
    prompt: str
    line: int
    description: str = ""
    accept: tuple[Check, ...] = ()
    criteria: tuple[str, ...] = ()
    #: The calibration floors of criteria written as mappings, by criterion text.
    criteria_floors: Mapping[str, CalibrationFloor] = field(default_factory=dict, hash=False)
    attempts: int | None = None
    limits: Limits | None = None


@dataclass(frozen=True)
class PlanAccept:
    """`plan_accept:`: what a planner's plan must satisfy before any step runs."""

    has_step: str | None = None  # a regex some step id matches
    min_steps: int | None = None
    max_steps: int | None = None


#: What a trigger suite (`triggers:`) may measure (the check kinds' ``triggers``).
TRIGGER_COMPONENTS = ("skill", "subagent", "command")


@dataclass(frozen=True)
class Trigger:
    """One prompt of a trigger suite (docs/how-to/triggers.md): the component it measures,
    whether the prompt should fire it, the check that sees it, and the suite's gates."""

    component: str  # one of TRIGGER_COMPONENTS
    name: str
    should: bool
    check: Check
    min_precision: float | None = None
    min_recall: float | None = None

    @property
    def label(self) -> str:
        """``skill changelog``."""
        return f"{self.component} {self.name}"


@dataclass(frozen=True)
class Spec:
    """One agent task with its acceptance checks; paths are absolute and resolved."""

    name: str
    path: Path
    line: int
    prompt: str
    description: str = ""
    workspace: Path | None = None
    workspace_ref: str | None = None  # the git commit whose tree is copied
    workspace_exclude: tuple[str, ...] = ()
    #: `include:` globs: pytest-atom's own files the workspace copy keeps.
    include: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()  # commands run in the attempt folder before the agent
    #: The workspace files (globs) set-up reads, which key its cache (none: the whole
    #: workspace), and whether it is cached.
    setup_inputs: tuple[str, ...] = ()
    setup_cache: bool = True
    env: Mapping[str, str] = field(default_factory=dict, hash=False)  # as written (`expand_env`)
    pass_env: tuple[str, ...] = ()  # caller variables (names or globs) its processes get
    marks: tuple[Mark, ...] = ()  # `marks:`, as pytest marks of the spec's item
    script: Path | None = None
    oracle: Path | None = None  # a known-good solution, run by `atom validate`
    toolname: str | None = None
    max_iterations: int = 10
    timeout: float = 600.0
    accept: tuple[Check, ...] = ()
    criteria: tuple[str, ...] = ()
    #: The calibration floors of criteria written as mappings, by criterion text.
    criteria_floors: Mapping[str, CalibrationFloor] = field(default_factory=dict, hash=False)
    xfail: str | None = None
    cassette: Path | None = None
    #: The command that records `cassette` (``{mode}``: the record mode) when it is not
    #: ``pytest --atom``: every "record it with" hint.
    record_with: str | None = None
    model: str | None = None
    claude: ClaudeOptions = ClaudeOptions()
    agent: AgentChoice | None = None  # None: Claude Code itself is the executor
    sandbox: SandboxOptions | None = SandboxOptions()  # None: `sandbox: false`, no sandbox
    #: `cache: {trust: [...]}`: what the outcome cache may take on trust though its digest
    #: cannot see it (`outcome_cache.inputs.TRUSTS`).
    cache_trust: tuple[str, ...] = ()
    attempts: int = 3
    reflector: ReflectorOptions = ReflectorOptions()
    snapshot: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # project tools on the agent's PATH
    #: The spec's own `limits:` (`timeout` folded in); the project's fill the rest.
    limits: Limits = field(default_factory=Limits)
    baseline_tolerance: Mapping[str, float | None] = field(default_factory=dict, hash=False)
    steps: tuple[Step, ...] = ()  # then `prompt` lists the steps' prompts, for reports
    session: str = "continue"  # with steps: one conversation ("continue") or one per step
    max_rollbacks: int = 2
    user: UserSpec | None = None
    #: Planner mode: a planner turns it into the steps; until then `prompt` is the request.
    request: str | None = None
    plan_accept: PlanAccept | None = None
    #: Which arm of its spec this is (``<spec name>[<arm>]``), and whether others compare to it.
    arm: str | None = None
    arm_reference: bool = False
    #: The case this spec was rendered for (then `name` is ``<spec name>[<case id>]``,
    #: before any arm), and its variables.
    case: str | None = None
    case_vars: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: A case's criteria as the spec file writes them, unrendered (empty: `criteria`).
    criteria_written: tuple[str, ...] = ()
    #: How many runs the spec gets, and how many must pass; None: the run's settings decide.
    repeats: int | None = None
    pass_at_least: int | None = None
    trigger: Trigger | None = None  # a trigger suite's prompt: the component it measures
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def root(self) -> Path:
        """The spec file's folder: spec-side relative paths are resolved against it."""
        return self.path.parent

    @property
    def base_name(self) -> str:
        """The spec's own name, without its case and arm."""
        name = self.name.removesuffix(f"[{self.arm}]") if self.arm else self.name
        return name.removesuffix(f"[{self.case}]") if self.case else name

    @property
    def criteria_keys(self) -> tuple[str, ...]:
        """Each criterion's words as the spec file writes them: what its calibration is
        keyed by, so a templated criterion's calibration pools all its cases' samples."""
        return self.criteria_written or self.criteria

    def with_repeats(self, repeat: int) -> Spec:
        """This spec with its count of runs settled: its own `repeats:` wins over the run's
        (``--atom-repeat``): the author's statement is part of the test."""
        return self if self.repeats is not None else replace(self, repeats=repeat)

    def with_limits(self, config: AtomConfig | None) -> Spec:
        """This spec as it runs in its project (`config`): its own limits over the
        project's, per key, and the project's `pass_env:` in front of its own. The timeout
        (the spec's, the project's, else 600 s) goes to `Spec.timeout` too, for reports."""
        limits = self.limits.over(config.limits if config is not None else Limits())
        timeout = limits.timeout if limits.timeout is not None else self.timeout
        passed = tuple(dict.fromkeys([*(config.pass_env if config else ()), *self.pass_env]))
        return replace(
            self, limits=replace(limits, timeout=timeout), timeout=timeout, pass_env=passed
        )


def steps_prompt(steps: Sequence[Step]) -> str:
    """A multi-step spec's `prompt`, for reports: each step's prompt under its id."""
    return "\n\n".join(f"[{s.id}] {s.prompt.strip()}" for s in steps)
