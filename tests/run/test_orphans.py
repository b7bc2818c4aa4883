"""No orphans: whatever ends the harness, no process of its runs is left.

A `kill -9` of pytest once left the `claude` process running for minutes, its sandboxed
command to the end, and a socat bridge 14 minutes after an aborted CLI. `processes.spawn`
puts a supervisor (a child subreaper with a parent-death signal) between the harness and
each command. The fast tests drive it with plain shells that double-fork out of their
process group and session; the slow ones kill -9 `pytest --atom` and `atom run` while
the agent's sandboxed `sleep 25` runs, through the real CLI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from pytest_atom.processes import kill_process_tree, spawn
from tests.helpers import bash

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the supervisor is Linux's (processes.py)"
)

#: The issue's promise: within this many seconds of the kill, nothing of the run is left.
PROMISED = 15.0

#: A shell whose child leaves its session and is orphaned at once (its subshell exits), as a
#: daemon or a bridge started in a session of its own is: out of reach of a group kill, and
#: re-parented away from the tree before anything is killed.
ESCAPES = "(setsid sleep 300 &); sleep 300"

#: A harness: spawns its first argument as a shell command, prints the supervisor's pid.
HARNESS = """
import sys
from pytest_atom.processes import spawn
proc = spawn(["sh", "-c", sys.argv[1]], start_new_session=True)
print(proc.pid, flush=True)
proc.wait()
"""

#: An xdist worker's stand-in: tied to its parent, it spawns its first argument.
WORKER = "from pytest_atom.processes import end_with_parent\nend_with_parent()\n" + HARNESS


def in_folder(folder: Path) -> list[psutil.Process]:
    """Every live process whose working folder is `folder` or below (a run's processes)."""
    found = []
    for proc in psutil.process_iter():
        try:
            cwd = proc.cwd()
            if (cwd == str(folder) or cwd.startswith(f"{folder}/")) and alive(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def left_after(
    watched: list[psutil.Process], folder: Path, seconds: float = PROMISED
) -> tuple[list[psutil.Process], float]:
    """What of `watched` (and whatever runs in `folder`) is still alive once it all ended or
    `seconds` passed, and the seconds it took."""
    started = time.monotonic()
    while True:
        left = {p.pid: p for p in watched if alive(p)} | {p.pid: p for p in in_folder(folder)}
        took = time.monotonic() - started
        if not left or took > seconds:
            return list(left.values()), took
        time.sleep(0.05)


def described(procs: list[psutil.Process]) -> str:
    lines = []
    for proc in procs:
        try:
            lines.append(f"{proc.pid} {proc.name()}: {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            lines.append(f"{proc.pid} (gone)")
    return "\n".join(lines)


def kill_all(procs: list[psutil.Process]) -> None:
    """Teardown: leave nothing behind, whatever the test found."""
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[list[psutil.Process]]:
    """Processes a test watches; whatever of them, or in its folder, lives on is killed."""
    watched: list[psutil.Process] = []
    yield watched
    kill_all(watched + in_folder(tmp_path))


def sleeps(folder: Path, count: int, within: float = 30) -> list[psutil.Process]:
    """Wait for `count` `sleep 300` processes in `folder`."""
    deadline = time.monotonic() + within
    while True:
        found = [p for p in in_folder(folder) if p.name() == "sleep"]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"only {len(found)} of {count} sleeps started"
        time.sleep(0.02)


def start_harness(
    code: str, command: str, folder: Path, wrapper: list[str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Run `code` (HARNESS, WORKER) in a python of its own in `folder`, inside `wrapper`'s
    command if given; the harness's process and the supervisor's pid it printed."""
    args = [sys.executable, "-c", code, command]
    proc = subprocess.Popen(
        [*(wrapper or []), *args], cwd=folder, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    with proc.stdout:
        return proc, int(proc.stdout.readline())


def test_a_kill_9_of_the_harness_ends_every_process_below_it_at_once(
    tmp_path: Path, leftovers: list[psutil.Process]
) -> None:
    harness, supervisor = start_harness(HARNESS, ESCAPES, tmp_path)
    found = sleeps(tmp_path, 2)
    leftovers += [psutil.Process(supervisor), *found]
    # left the session (a group or session kill misses it), and its parent ended: the
    # subreaper at work, it came to the supervisor, not to init
    [escaped] = [p for p in found if os.getsid(p.pid) != os.getsid(supervisor)]
    deadline = time.monotonic() + 10
    while escaped.ppid() != supervisor and time.monotonic() < deadline:
        time.sleep(0.02)
    assert escaped.ppid() == supervisor, described(found)
    harness.kill()
    harness.wait()
    left, took = left_after(leftovers, tmp_path)
    assert not left, f"alive {took:.1f}s after the kill -9:\n{described(left)}"
    assert took < 5, f"the tree took {took:.1f}s to end"


def test_a_command_s_orphans_end_when_the_command_ends(
    tmp_path: Path, leftovers: list[psutil.Process]
) -> None:
    """The normal path: a CLI that exits leaves no bridge or background job behind."""
    with spawn(
        ["sh", "-c", "(setsid sleep 300 >/dev/null &); echo ran"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdout.read() == "ran\n"
    assert proc.returncode == 0
    assert not in_folder(tmp_path), described(in_folder(tmp_path))


def test_kill_process_tree_reaches_a_process_whose_parent_had_already_ended(
    tmp_path: Path, leftovers: list[psutil.Process]
) -> None:
    """An aborted CLI (timeout, error): a process orphaned before the kill is no longer the
    CLI's descendant; without the subreaper it went to init and outlived the abort."""
    proc = spawn(["sh", "-c", ESCAPES], cwd=tmp_path, start_new_session=True)
    leftovers += sleeps(tmp_path, 2)
    kill_process_tree(proc)
    assert proc.returncode == -signal.SIGTERM
    left, took = left_after(leftovers, tmp_path, seconds=5)
    assert not left, f"alive {took:.1f}s after the abort:\n{described(left)}"


def test_the_supervisor_passes_streams_status_and_start_errors_through(tmp_path: Path) -> None:
    """The harness sees the command as if it had started it itself."""
    with spawn(
        ["sh", "-c", 'cat; echo "$ATOM_X $(pwd)" >&2; exit 3'],
        cwd=tmp_path,
        env={"ATOM_X": "x", "PATH": os.environ["PATH"]},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        out, err = proc.communicate("prompt")
    assert (proc.returncode, out, err) == (3, "prompt", f"x {tmp_path}\n")
    killed = spawn("kill -KILL $$", shell=True)
    assert killed.wait() == -signal.SIGKILL
    with pytest.raises(FileNotFoundError) as missing:
        spawn([str(tmp_path / "no-such-cli"), "-p"])
    assert missing.value.filename == str(tmp_path / "no-such-cli")
    with pytest.raises(PermissionError):
        spawn([str(tmp_path)])  # a folder: not executable


def test_a_spawning_thread_that_ends_does_not_end_the_tree(
    tmp_path: Path, leftovers: list[psutil.Process]
) -> None:
    """Linux sends the parent-death signal when the *thread* that forked ends; the harness
    itself is alive, so the supervisor goes on."""
    started: list[subprocess.Popen[Any]] = []
    thread = threading.Thread(
        target=lambda: started.append(spawn(["sleep", "300"], cwd=tmp_path, start_new_session=True))
    )
    thread.start()
    thread.join()
    leftovers += sleeps(tmp_path, 1)
    time.sleep(0.5)
    [proc] = started
    assert proc.poll() is None and all(alive(p) for p in leftovers)
    kill_process_tree(proc)


def test_a_worker_tied_to_its_parent_ends_with_it_and_so_does_its_tree(
    tmp_path: Path, leftovers: list[psutil.Process]
) -> None:
    """An xdist worker outlived a `kill -9` of its controller, running its spec on; tied to
    the controller (`end_with_parent`), it ends, and its supervisor ends the tree."""
    controller = [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"]
    parent, supervisor = start_harness(WORKER, ESCAPES, tmp_path, wrapper=controller)
    leftovers += [*psutil.Process(parent.pid).children(recursive=True), *sleeps(tmp_path, 2)]
    assert psutil.Process(supervisor) in leftovers
    parent.kill()
    parent.wait()
    left, took = left_after(leftovers, tmp_path)
    assert not left, f"alive {took:.1f}s after the controller's kill -9:\n{described(left)}"


# --- through the real CLI ------------------------------------------------------------------

#: The agent's sandboxed command, long enough to outlive a kill by far.
SLEEP = 25

#: Without xdist: a worker whose controller is killed is interrupted by execnet after some
#: seconds and kills its CLI itself (`end_with_parent` ends it sooner: the fast test above).
FRONT_ENDS = {
    "pytest": [
        *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider"),
        "--atom",
        "wait.atom.yaml",
    ],
    "atom run": [str(Path(sys.executable).with_name("atom")), "run", "wait.atom.yaml"],
}


def wait_for_sleep(front_end: subprocess.Popen[bytes], log: Path) -> list[psutil.Process]:
    """The front end's processes once the agent's `sleep` runs in its sandbox."""
    deadline = time.monotonic() + 180
    root = psutil.Process(front_end.pid)
    while True:
        tree = root.children(recursive=True)
        if any(p.name() == "sleep" and p.cmdline()[1:] == [str(SLEEP)] for p in tree if alive(p)):
            return [root, *tree]
        if front_end.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the agent's sleep never started:\n{log.read_text()}")
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_a_kill_9_of_the_front_end_leaves_no_process_of_its_run(
    front_end: str, tmp_path: Path, claude_bin: Path, leftovers: list[psutil.Process]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wait.atom.yaml").write_text(
        "name: wait\nprompt: Wait.\nscript: script.yaml\ntimeout: 120\n", encoding="utf-8"
    )
    turns = [bash(f"touch started; sleep {SLEEP}"), {"text": "Done.\nEXIT_LOOP_NOW"}]
    (project / "script.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    log = tmp_path / "output.txt"
    with log.open("w") as output:
        proc = subprocess.Popen(
            FRONT_ENDS[front_end], cwd=project, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    leftovers.append(psutil.Process(proc.pid))
    leftovers += wait_for_sleep(proc, log)[1:]
    names = {p.name() for p in leftovers if alive(p)}
    assert {"claude", "socat", "bwrap", "sleep"} <= names, names  # what the run had going
    proc.kill()
    proc.wait()
    left, took = left_after(leftovers, project)
    assert not left, f"alive {took:.1f}s after the kill -9 of {front_end}:\n{described(left)}"
