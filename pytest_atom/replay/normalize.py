"""Normalization: the parts of a request that change from run to run become placeholders.

A replay happens in another temp folder, on another day, for another user, with another
session id; the CLI puts all of those into its request bodies. Both the recorded and the
live request are normalized the same way, and matching compares the normalized forms.
Responses get the path placeholders back, so a replayed tool call lands in the live folder.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pytest_atom.replay.placeholders import PathMasks

_BILLING = [
    (re.compile(r"cc_version=[^;\s\"]*"), "cc_version=<CC_VERSION>"),
    (re.compile(r"cch=[^;\s\"]*"), "cch=<CCH>"),
]
#: Wall times printed by commands ("2 passed in 1.41s", "Finished in 0.35 sec"): they
#: change on every run. Only tool results are touched, and only decimal durations.
_DURATION = re.compile(r"\b\d+\.\d+ ?(?:ms|us|µs|s|sec|secs|seconds)\b")


@dataclass(frozen=True)
class MachineDetail:
    """Something Claude Code writes into its requests that names the machine, not the task.
    `pattern` matches only the machine's value (never its mask), `mask` replaces the match
    (``\\1`` keeps a group), `marker` is in every match: a text without it is skipped."""

    name: str  # as `atom cassette check` and a divergence report say it
    marker: str
    pattern: re.Pattern[str]
    mask: str
    example: str  # a line as the CLI writes it, unmasked (documentation and tests)

    def sub(self, text: str) -> str:
        return self.pattern.sub(self.mask, text) if self.marker in text else text

    def unmasked(self, text: str) -> list[str]:
        """The machine values this detail still has in `text` (none once masked)."""
        return [m.group(0) for m in self.pattern.finditer(text)] if self.marker in text else []


def _environment_line(label: str, mask: str) -> re.Pattern[str]:
    """The value of one line of the environment block (`` - OS Version: Linux 6.1``), up to
    its line's end (or a backslash or a quote, in a body kept as JSON text)."""
    return re.compile(rf'(?<= - {label}: )(?!{re.escape(mask)})[^\n\\"]+')


def _variable(names: str, value: str, before: str = "") -> re.Pattern[str]:
    """The value of a variable in `names` as a command prints it (``NAME=value``, quoted, as
    JSON, JSON-escaped); group 1 is all before the value. No word boundary before the name:
    in a JSON text a line starts after the letter of ``\\n``."""
    assignment = r"""(?:=|\\?["']\s*:\s*)\\?["']?"""
    return re.compile(rf"((?:{names}){assignment}{before}){value}")


#: What Claude Code's sandbox gives the agent's shell afresh for each CLI process, seen by a
#: command that prints its environment (`env`, 2.1.332): they name one process, not the
#: task, so a tool result showing them is masked on both sides like a machine detail.
PROCESS_DETAILS: tuple[MachineDetail, ...] = (
    MachineDetail(
        "the CLI's process id",
        "CLAUDE_PID",
        _variable("CLAUDE_PID", r"\d+"),
        r"\1<PID>",
        "CLAUDE_PID=14525",
    ),
    MachineDetail(
        "the sandbox proxy's session user",
        "srt.",
        re.compile(r"(?<![\w.])srt\.[A-Za-z0-9+/_-]{16,}={0,2}"),
        "srt.<PROXY_USER>",
        "http_proxy=http://srt.OTY4MjY3NGViZjFjZmNkNzlhMWM2ZDk0ZDE3ZDc1YWFh:<SECRET:REDACTED>"
        "@127.0.0.1:3128",
    ),
    MachineDetail(
        "a port of the sandbox's bridges",
        "_PROXY_PORT",
        _variable(r"CLAUDE_CODE_HOST_(?:HTTP|SOCKS)_PROXY_PORT", r"\d+"),
        r"\1<PORT>",
        "CLAUDE_CODE_HOST_SOCKS_PROXY_PORT=39275",
    ),
    MachineDetail(
        "the CLI's messaging socket",
        "cc-socks",
        re.compile(r"(cc-socks(?:-\d+|-<UID>)?/)\d+(?=\.sock\b)"),
        r"\1<PID>",
        "CLAUDE_CODE_MESSAGING_SOCKET=<RUN_DIR>/tmp/cc-socks/14525.sock",
    ),
    MachineDetail(
        "the gateway's port",
        "ANTHROPIC_BASE_URL",
        _variable("ANTHROPIC_BASE_URL", r"\d+", before=r"https?://[\w.-]+:"),
        r"\1<PORT>",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:42267",
    ),
)


#: Every machine detail Claude Code (2.1.330 to 2.1.332) writes into a request, and what its
#: sandbox gives one process (the run's folders are placeholders.volatile_paths). Each mask
#: applies to live requests and, on load, to older recordings (`mask_machine`).
MACHINE_DETAILS: tuple[MachineDetail, ...] = (
    MachineDetail(
        "kernel release",
        " - OS Version: ",
        _environment_line("OS Version", "<OS_VERSION>"),
        "<OS_VERSION>",
        " - OS Version: Linux 6.18.44-fc-v782",
    ),
    MachineDetail(
        "operating system",
        " - Platform: ",
        _environment_line("Platform", "<PLATFORM>"),
        "<PLATFORM>",
        " - Platform: linux",
    ),
    # The shell the CLI runs commands in, and `$SHELL` where that differs.
    MachineDetail(
        "login shell",
        " - Shell: ",
        _environment_line("Shell", "<SHELL>"),
        "<SHELL>",
        " - Shell: bash (login shell: zsh)",
    ),
    # The sandbox cuts its list of denied paths off with a count of this machine's rest.
    MachineDetail(
        "count of the sandbox's paths",
        "truncated for prompt size",
        re.compile(r"\.\.\. and \d+ more \(truncated for prompt size\)"),
        "... and <N> more (truncated for prompt size)",
        "... and 155 more (truncated for prompt size)",
    ),
    # The toolchains the read guard re-opens, listed after the run folder: dropped whole.
    MachineDetail(
        "toolchain folders",
        "allowWithinDeny",
        re.compile(
            r'(allowWithinDeny\\?":\[(?:\\?"[^"\\\]]*\\?",)*\\?"<RUN_DIR>\\?")'
            r'(?:,\\?"[^"\\\]]*\\?")+(?=\])'
        ),
        r"\1",
        '"allowWithinDeny":["/usr","<RUN_DIR>","/home/alice/.pyenv"]',
    ),
    # The sandbox's folders named after the user id that stay in /tmp whatever `$TMPDIR`
    # says (`cc-socks` when `$TMPDIR` is too deep for the CLI's messaging socket).
    MachineDetail(
        "user id",
        "/tmp/",
        re.compile(r"(?<![\w.-])/tmp/(claude|cc-daemon|claude-host|cc-socks)-\d+(?![\w.-])"),
        r"<TMP>/\1-<UID>",
        "/tmp/cc-daemon-1000",
    ),
    # The short temp folder of a run folder too deep for the sandbox's sockets
    # (environment.py tmpdir_for), recorded before volatile_paths masked the live one.
    MachineDetail(
        "short temp folder",
        "/tmp/atom-",
        re.compile(r"(?<![\w./-])(?:/private)?/tmp/atom-[0-9a-f]{16}(?![\w.-])"),
        "<RUN_DIR>/tmp",
        '"allowRead":["/tmp/atom-b0fb33bf18ea9e98","<RUN_DIR>"]',
    ),
    # The CLI's cache folder, `$XDG_CACHE_HOME/claude-cli-nodejs`, in the sandbox's path
    # list: `<HOME>/.cache` in a run (environment.py), the caller's in older recordings.
    MachineDetail(
        "XDG cache folder",
        "/claude-cli-nodejs",
        re.compile(
            r'(?<=")(?!<HOME>/\.cache/claude-cli-nodejs)[^"\\\s]+/claude-cli-nodejs(?=\\?")'
        ),
        "<HOME>/.cache/claude-cli-nodejs",
        '"/home/bob/.xdg-cache/claude-cli-nodejs"',
    ),
    # The sandbox a spec's hook runs in (agents.claude_code.srt): Claude Code names a failed
    # hook by its command, whose wrapper is the harness's, not the spec's. Masked to one
    # token, so a recording made under either wrapper (srt, or bubblewrap before it) matches.
    MachineDetail(
        "the sandbox a hook runs in",
        "srt --settings ",
        re.compile(
            r"(?:[^\s\[\"'\\]*\bflock \S+ )?"  # hooks take turns (agents.claude_code.sandbox)
            r"[^\s\[\"'\\]*\bsrt --settings \S+ -- /usr/bin/env(?: [A-Z]+=\S+)* "
        ),
        "<HOOK_SANDBOX> ",
        "PreToolUse:Bash hook error: [/usr/bin/flock <RUN_DIR>/hooks.lock <HOME>/.cache/"
        "pytest-atom/sandbox-runtime/0.0.83/node_modules/.bin/srt --settings <RUN_DIR>/srt/8f2c.json -- /usr/bin/env "
        "TMPDIR=<RUN_DIR>/tmp /bin/sh -c 'exit 2']: no",
    ),
    MachineDetail(
        "the sandbox a hook runs in",
        "bwrap --die-with-parent ",
        re.compile(
            r"\bbwrap --die-with-parent --unshare-net --ro-bind / / --dev /dev --proc /proc"
            r"(?: --bind \S+ \S+)* -- "
        ),
        "<HOOK_SANDBOX> ",
        "PreToolUse:Bash hook error: [bwrap --die-with-parent --unshare-net --ro-bind / / "
        "--dev /dev --proc /proc --bind <RUN_DIR>/attempts/a01 <RUN_DIR>/attempts/a01 -- "
        "/bin/sh -c 'exit 2']: no",
    ),
    *PROCESS_DETAILS,
)


def mask_machine_text(text: str) -> str:
    """`text` with every known machine detail masked."""
    for detail in MACHINE_DETAILS:
        text = detail.sub(text)
    return text


def mask_machine(body: Any) -> Any:
    """`body` (any JSON value) with every known machine detail masked: bodies recorded
    before a mask existed, on load. Idempotent, so old cassettes match on any machine."""
    return _map_values(body, mask_machine_text)


def _map_values(node: Any, change: Callable[[str], str]) -> Any:
    """A copy of JSON data with `change` applied to every string value (keys stay)."""
    if isinstance(node, str):
        return change(node)
    if isinstance(node, list):
        return [_map_values(item, change) for item in node]
    if isinstance(node, dict):
        return {key: _map_values(value, change) for key, value in node.items()}
    return node


def unmasked_machine_details(text: str) -> list[tuple[str, str]]:
    """(what, value) of each machine detail left unmasked in `text`, each once."""
    found = [(d.name, v) for d in MACHINE_DETAILS for v in d.unmasked(text)]
    return list(dict.fromkeys(found))


def mask_durations(text: str) -> str:
    """Wall times in command output as ``<DURATION>``: they are noise to a judge and a matcher."""
    return _DURATION.sub("<DURATION>", text)


def run_dates(now: datetime | None = None) -> list[str]:
    """Dates the CLI may write today: local and UTC, and yesterday (a run crossing midnight)."""
    now = now or datetime.now()
    days: set[date] = {now.date(), now.astimezone(UTC).date()}
    days |= {d - timedelta(days=1) for d in days}
    return sorted(d.isoformat() for d in days)


#: Where Claude Code names a background task it started, with an id random per run: a
#: subagent (``agentId: a68…``, ``<task-id>a68…</task-id>``), a background shell command
#: (``with ID: …``, ``(ID: …)``). The id recurs in the model's later calls.
_TASK_ID = re.compile(r"(?:\bagentId: |<task-id>|\bwith ID: |\(ID: )([A-Za-z0-9_-]{6,64})")
#: Wall-clock times Claude Code writes itself: a subagent's (``duration_ms: 436``), a
#: command's before it was backgrounded (``after running for 12s``).
_WALL_CLOCK = [
    ("duration_ms", re.compile(r"(\bduration_ms(?::\s*|>))\d+"), r"\1<MS>"),
    ("after running for ", re.compile(r"(\bafter running for )\d+s\b"), r"\1<N>s"),
]


class Normalizer:
    """Turns request bodies and response texts into their run-independent form.

    Background task ids are numbered for the whole run, in conversation order, never by
    arrival (`task_ids_in_call_order`): a replayed answer naming ``<TASK_ID:1>`` must reach
    the task the live run started under that number. Shared by a run's threads."""

    def __init__(self, paths: Mapping[str, str], dates: Iterable[str] = ()) -> None:
        #: The run's machine paths and their placeholders (`replay.placeholders`).
        self.masks = PathMasks(paths)
        self._dates = re.compile("|".join(re.escape(d) for d in dates)) if dates else None
        self._tasks: dict[str, str] = {}  # live background task id -> <TASK_ID:n>
        self._task_re: re.Pattern[str] | None = None
        self._tasks_lock = threading.Lock()

    def _task_ids(self, text: str) -> str:
        """Background task ids -> ``<TASK_ID:n>``, learning the ids `text` reveals."""
        if _names_task(text):
            self._learn(_TASK_ID.findall(text))
        if self._task_re is None:
            return text
        return self._task_re.sub(lambda m: self._tasks[m.group(0)], text)

    def _learn(self, found: Iterable[str]) -> None:
        with self._tasks_lock:
            new = [i for i in dict.fromkeys(found) if i not in self._tasks]
            for task in new:
                self._tasks[task] = f"<TASK_ID:{len(self._tasks) + 1}>"
            if new:
                ids = "|".join(re.escape(i) for i in self._tasks)
                self._task_re = re.compile(f"\\b(?:{ids})\\b")

    def add_paths(self, paths: Mapping[str, str]) -> None:
        """More volatile paths, known once the run is under way; call it between sessions."""
        self.masks = self.masks.with_paths(paths)

    def paths_out(self, text: str) -> str:
        """Live paths (and the run's task ids) -> placeholders: for recorded answers."""
        if self._task_re is not None:
            text = self._task_re.sub(lambda m: self._tasks[m.group(0)], text)
        # `PathMasks.out`, inline: every string of every request passes here.
        masks = self.masks
        return text if masks.pattern is None else masks.pattern.sub(masks.substitute, text)

    def paths_in(self, text: str) -> str:
        """Placeholders -> live paths and task ids (for replayed responses)."""
        text = self.masks.into(text)
        if "<TASK_ID:" in text:
            for task, placeholder in list(self._tasks.items()):
                text = text.replace(placeholder, task)
        return text

    def text(self, text: str) -> str:
        text = self.paths_out(text)
        if self._dates is not None:
            text = self._dates.sub("<DATE>", text)
        for pattern, placeholder in _BILLING:
            text = pattern.sub(placeholder, text)
        return mask_machine_text(text)

    def body(self, body: Any) -> Any:
        """A normalized copy of a JSON request body (the walk builds new containers)."""
        self._learn(task_ids_in_call_order(body, _TASK_ID))
        ids: dict[str, str] = {}

        def walk(node: Any, in_result: bool = False) -> Any:
            if isinstance(node, str):
                text = self._task_ids(self.text(node))
                for marker, pattern, mask in _WALL_CLOCK:
                    text = pattern.sub(mask, text) if marker in text else text
                return mask_durations(text) if in_result else text
            if isinstance(node, list):
                return [walk(n, in_result) for n in node]
            if isinstance(node, dict):
                in_result = in_result or node.get("type") == "tool_result"
                out = {k: walk(v, in_result) for k, v in node.items()}
                for key in ("id", "tool_use_id"):
                    if key in out and node.get("type") in (
                        "tool_use",
                        "tool_result",
                        "server_tool_use",
                    ):
                        out[key] = ids.setdefault(node[key], f"<TOOL_ID:{len(ids) + 1}>")
                return out
            return node

        out = walk(body)
        if isinstance(out, dict) and "metadata" in out:
            out["metadata"] = "<METADATA>"  # device id, account, session id
        return results_in_call_order(out)


def _names_task(text: str) -> bool:
    return "ID: " in text or "agentId" in text or "<task-id>" in text


def task_ids_in_call_order(body: Any, pattern: re.Pattern[str]) -> list[str]:
    """The task ids (`pattern`'s first group) that `body`'s tool results name, in the order
    of the calls they answer, then of the results: Claude Code sends concurrent results in
    the order they completed, so two subagents finishing the other way round would otherwise
    swap numbers. A result whose call the body does not hold follows those that have one."""
    messages = body.get("messages") if isinstance(body, dict) else None
    calls: dict[str, int] = {}  # tool_use id -> its place among the body's calls
    results: list[tuple[str, str]] = []  # (tool_use_id, result text naming a task)
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls.setdefault(str(block.get("id")), len(calls))
            elif block.get("type") == "tool_result":
                text = _joined(block.get("content"))
                if _names_task(text) or "<TASK_ID:" in text:
                    results.append((str(block.get("tool_use_id")), text))
    unknown = len(calls)
    ordered = sorted(enumerate(results), key=lambda item: (calls.get(item[1][0], unknown), item[0]))
    return [task for _, (_, text) in ordered for task in pattern.findall(text)]


def _joined(content: Any) -> str:
    """Every string in a tool result's content, joined (its texts, wherever they sit)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_joined(item) for item in content)
    if isinstance(content, dict):
        return "\n".join(_joined(value) for value in content.values())
    return ""


_TASK_PLACEHOLDER = re.compile(r"<TASK_ID:(\d+)>")


def renumber_task_ids(bodies: list[Any], responses: list[str]) -> tuple[list[Any], list[str]]:
    """Recorded bodies and responses with their ``<TASK_ID:n>`` numbered as `Normalizer`
    numbers them now, for cassettes numbered by arrival; the bodies in recorded order, each
    one's tool results first, in call order. One numbered so already comes back unchanged."""
    mapping: dict[str, str] = {}

    def learn(found: Iterable[str]) -> None:
        for old in found:
            mapping.setdefault(old, str(len(mapping) + 1))

    for body in bodies:
        if "<TASK_ID:" not in (text := json.dumps(body, ensure_ascii=False)):
            continue
        learn(task_ids_in_call_order(body, _TASK_PLACEHOLDER))
        learn(_TASK_PLACEHOLDER.findall(text))
    for response in responses:
        learn(_TASK_PLACEHOLDER.findall(response) if "<TASK_ID:" in response else [])
    if all(old == new for old, new in mapping.items()):
        return bodies, responses

    def renumber(text: str) -> str:
        if "<TASK_ID:" not in text:
            return text
        return _TASK_PLACEHOLDER.sub(lambda m: f"<TASK_ID:{mapping[m.group(1)]}>", text)

    return [_map_values(body, renumber) for body in bodies], [renumber(r) for r in responses]


_TOOL_ID = re.compile(r"<TOOL_ID:(\d+)>")


def results_in_call_order(body: Any) -> Any:
    """`body` with each message's tool results in the order their calls were made: Claude
    Code sends concurrent results in the order they *completed*, the machine's timing.
    Pure: containers that change are copied (loaded cassettes share blocks)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not any(_has_results(m) for m in messages):
        return body
    return {**body, "messages": [_ordered(m) if _has_results(m) else m for m in messages]}


def _has_results(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and sum(_is_result(b) for b in content) > 1


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _call_number(block: dict[str, Any]) -> int:
    found = _TOOL_ID.fullmatch(str(block.get("tool_use_id")))
    return int(found.group(1)) if found else 1 << 30  # an unknown id keeps its place last


def _ordered(message: dict[str, Any]) -> dict[str, Any]:
    """The results sorted into their slots; a cache breakpoint stays with its slot, as
    Claude Code puts it on the message's last block whichever result that is."""
    content = message["content"]
    results = iter(sorted((b for b in content if _is_result(b)), key=_call_number))
    out = []
    for block in content:
        if not _is_result(block):
            out.append(block)
            continue
        moved = {k: v for k, v in next(results).items() if k != "cache_control"}
        if "cache_control" in block:
            moved["cache_control"] = block["cache_control"]
        out.append(moved)
    return {**message, "content": out}
