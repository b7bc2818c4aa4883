"""Process trees: every process a run starts ends with the run, however the run ends.

`spawn` is how the harness starts anything that may start processes of its own (the Claude
Code CLI, an SDK app, a project tool, an MCP server, a check's shell). On Linux it puts a
small supervisor between the harness and the command: this module's `supervise`, run by a
Python of its own (``python -I -S``: builtin modules and ctypes, about 20 ms of CPU).

The supervisor
- is a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): every process below it whose
  parent dies is re-parented to it, not to init, so a shell that double-forks or a bridge
  started in a session of its own stays in reach;
- has a *parent-death signal* (``prctl(PR_SET_PDEATHSIG)``): the kernel tells it when the
  harness dies, ``kill -9`` included, which no handler in the harness could;
- ends every process left below it (SIGTERM, then SIGKILL after `GRACE` seconds) when the
  harness dies, when it is told to stop (SIGTERM, SIGINT, SIGHUP), and when the command
  itself ends, and then exits with the command's own status.

Why not less: a parent-death signal set in the command's own process reaches that process
only (the CLI), never its children; Claude Code's bubblewrap dies with its parent, but the
socat bridges beside it and the CLI itself would not; a process group or session is left by
any child that calls setsid; cgroups need privileges a test run does not have.

Elsewhere (macOS, BSD) there is no subreaper and no parent-death signal: `spawn` starts the
command directly, `kill_process_tree` still ends a tree the harness is alive to end, and a
harness killed with SIGKILL leaves its CLI behind.
"""

from __future__ import annotations

import os
import sys

#: Read by mypy as `typing.TYPE_CHECKING`; a plain constant, so that the supervisor's
#: start-up imports neither `typing` nor `subprocess` (about 30 ms).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from typing import Any

#: Seconds the processes left below a supervisor get to end after SIGTERM, before SIGKILL.
GRACE = 1.0

#: Seconds between two looks at whether the parent `end_with_parent` names is still there.
PARENT_POLL = 0.5

#: The parent `end_with_parent` ties this process to, and whether its watch has started.
_PARENT: dict[str, int] = {}

#: prctl(2) options, from <linux/prctl.h>.
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

#: How long a supervisor keeps sweeping processes that fork while it kills them.
_SWEEP_SECONDS = 5.0

#: The supervisor's command: this module imported by its file name from its folder (its
#: cached bytecode is read), put last on `sys.path` so no neighbour shadows a standard module.
_SUPERVISOR = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    f"import sys; sys.path.append({os.path.dirname(os.path.abspath(__file__))!r}); "
    "from processes import supervise; sys.exit(supervise(sys.argv[1:]))",
]


def end_with_parent() -> None:
    """End this process (SIGKILL) when its parent ends, from its first `spawn` on: a
    pytest-xdist worker whose controller a `kill -9` ends takes its trees with it."""
    _PARENT.setdefault("pid", os.getppid())


def _watch_parent() -> None:
    if "pid" not in _PARENT or "started" in _PARENT:
        return
    import threading
    import time

    _PARENT["started"] = 1  # two threads spawning at once may start two watches: harmless
    parent = _PARENT["pid"]

    def watch() -> None:
        import signal

        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="atom-end-with-parent", daemon=True).start()


def spawn(args: Sequence[str] | str, **options: Any) -> subprocess.Popen[Any]:
    """Start `args` as `subprocess.Popen` would, below a supervisor (see the module's text).
    The `Popen` returned is the supervisor's (its pid leads the process group); its exit
    status, stdin, stdout and stderr are the command's; a command that cannot start raises
    Popen's `OSError`."""
    import subprocess

    _watch_parent()
    if options.pop("shell", False):
        args = ["/bin/sh", "-c", args] if isinstance(args, str) else ["/bin/sh", "-c", *args]
    command = [args] if isinstance(args, str) else list(args)
    if not (sys.platform.startswith("linux") and sys.executable):  # no supervisor
        return subprocess.Popen(command, **options)
    ready, report = os.pipe()
    try:
        proc = subprocess.Popen(
            [*_SUPERVISOR, str(report), str(os.getpid()), *command],
            pass_fds=(*options.pop("pass_fds", ()), report),
            **options,
        )
    except BaseException:  # a cwd that does not exist, say: Popen's own error, as before
        os.close(ready)
        raise
    finally:
        os.close(report)
    with os.fdopen(ready, "rb") as pipe:
        failure = pipe.read()  # empty once the command is running: its exec closed the pipe
    if failure:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
        code = int(failure)
        raise OSError(code, os.strerror(code), command[0])
    return proc


def _descendants(pid: int) -> list[int]:
    import psutil  # only when something is killed: keeps the plugin's import light

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:  # `pid` is gone already: nothing below it can be found any more
        return []


def kill_process_tree(proc: subprocess.Popen[Any]) -> None:
    """Kill the CLI, its process group and every descendant: the CLI starts its Bash tool's
    shell in a session of its own, so the tree is collected before anything dies (orphans
    are re-parented). Under a supervisor, its SIGTERM ends whatever the collection missed."""
    import signal
    import subprocess
    import time

    victims = _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        own = [proc.pid] if proc.poll() is None else []  # once reaped, its pid may be reused
        for kill, target in [(os.killpg, proc.pid), *((os.kill, pid) for pid in own + victims)]:
            try:
                kill(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=GRACE + 2.0 if sig == signal.SIGTERM else None)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(0.05)  # let children act on SIGTERM before the SIGKILL sweep


# --- the supervisor: a Python of its own (`_SUPERVISOR`); builtin modules and ctypes --------


def _signals() -> Any:
    """The signal functions, without the `signal` module's enums (a third of the start-up)."""
    try:
        return __import__("_signal")
    except ImportError:  # an interpreter without CPython's builtin module
        return __import__("signal")


def supervise(argv: list[str]) -> int:
    """``REPORT_FD PARENT_PID COMMAND...``: run COMMAND below this process until it ends or
    the parent dies, end everything left below, and return COMMAND's status for `sys.exit`.

    Every signal it acts on is blocked and taken with sigwaitinfo: no handler runs between
    a child's reaping and the reading of its status. SIGUSR1 is the parent's death; it also
    comes when the parent's *thread* that spawned this one ends, so the parent is checked."""
    sig = _signals()
    report, parent, command = int(argv[0]), int(argv[1]), argv[2:]
    stops = {sig.SIGTERM, sig.SIGINT, sig.SIGHUP}
    waited = {sig.SIGCHLD, sig.SIGUSR1, *stops}
    sig.pthread_sigmask(sig.SIG_BLOCK, waited)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, sig.SIGUSR1)
    if os.getppid() != parent:  # the harness died before the signal was armed
        return 1
    child = _start(sig, command, report)
    status = None
    while status is None:
        signo = sig.sigwaitinfo(waited).si_signo
        if signo == sig.SIGCHLD:
            status = _reap(child)[0]
        elif signo in stops or os.getppid() != parent:
            break
    if status is None or _reap(child)[1]:
        status = _end_below(sig, child, status)
    return _relay(sig, status)


def _prctl(option: int, value: int) -> None:
    """Best effort: where prctl or ctypes fails, the command still runs as a plain child."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(option, value, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass


def _start(sig: Any, command: list[str], report: int) -> int:
    """Fork and exec `command`; an exec failure's errno goes to `report` (the pipe `spawn`
    reads), success closes it. The supervisor keeps none of the command's streams open."""
    child = os.fork()
    if child == 0:  # the command: exec it, or report why not
        try:
            sig.pthread_sigmask(sig.SIG_SETMASK, set())
            for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores them; a command expects them
                sig.signal(getattr(sig, name), sig.SIG_DFL)
            os.set_inheritable(report, False)
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(report, str(exc.errno or 1).encode())
        finally:
            os._exit(127)
    os.close(report)
    null = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1):  # the command's stdin and stdout end when the command ends
        os.dup2(null, stream)
    os.close(null)
    return child


def _reap(child: int) -> tuple[int | None, bool]:
    """Reap every ended child: `child`'s status if it ended, and whether any is left below."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found, False
        if pid == 0:
            return found, True
        if pid == child:
            found = status


def _end_below(sig: Any, child: int, status: int | None) -> int:
    """SIGTERM everything below, then SIGKILL what is left after `GRACE` seconds, sweeping
    (for at most `_SWEEP_SECONDS`) until nothing is; `child`'s status."""
    import time

    _kill(_below(os.getpid()), sig.SIGTERM)
    deadline = time.monotonic() + GRACE
    while _below(os.getpid()) and time.monotonic() < deadline:
        status = _collect(child, status)
        time.sleep(0.02)
    deadline = time.monotonic() + _SWEEP_SECONDS
    while (alive := _below(os.getpid())) and time.monotonic() < deadline:
        _kill(alive, sig.SIGKILL)  # again each time: a process may fork meanwhile
        time.sleep(0.02)
        status = _collect(child, status)
    status = _collect(child, status)
    if status is None:  # killed, so about to end: wait for it
        try:
            status = os.waitpid(child, 0)[1]
        except ChildProcessError:  # reaped already (cannot happen: only this process reaps)
            status = 1 << 8
    return status


def _collect(child: int, status: int | None) -> int | None:
    """Reap what has ended; `child`'s status once known."""
    reaped = _reap(child)[0]
    return status if status is not None else reaped


def _kill(pids: list[int], signo: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signo)
        except (ProcessLookupError, PermissionError):
            pass


def _below(root: int) -> list[int]:
    """Every live (not zombie) process below `root`, read from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # ended meanwhile
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found, queue = [], list(children.get(root, []))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def _relay(sig: Any, status: int) -> int:
    """Exit as the command did: its exit code, or killed by the same signal (no core)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if -code != sig.SIGKILL:  # its disposition cannot be changed, nor need it
        sig.signal(-code, sig.SIG_DFL)
    sig.pthread_sigmask(sig.SIG_UNBLOCK, {-code})
    os.kill(os.getpid(), -code)
    return 128 - code  # a signal that does not end a process (SIGCHLD): exit as a shell would
