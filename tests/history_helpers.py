"""The history store's tests: a real PostgreSQL server, started here, and stores to test.

`PostgresServer.start` runs Debian's ``initdb`` and ``pg_ctl`` on a free port in a temp
folder; as root (CI) it runs them as the ``postgres`` user (`runuser`), since PostgreSQL
refuses to run as root, with a data folder that user owns. Each test gets a database of
its own (`PostgresServer.database`). Without the server's binaries the PostgreSQL half of
the tests skips, naming ``apt-get install postgresql``; CI installs them (`.ci/run`), so
there the skip is a failure (`CI` set).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pytest_atom.history.records import ItemRecord, RunRecord, new_run_id
from pytest_atom.history.sql import SqlStore
from pytest_atom.results.spec_result import CheckRow, CriterionRow

__all__ = [
    "GUARDED_PASSWORD",
    "GUARDED_ROLE",
    "PostgresServer",
    "bare_store",
    "item",
    "pg_bin",
    "run",
]

_PG_ROOT = Path("/usr/lib/postgresql")


def pg_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian's layout), or None."""
    if (found := shutil.which("initdb")) is not None:
        return Path(found).parent
    versions = sorted(
        (p for p in _PG_ROOT.glob("*/bin") if (p / "initdb").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return versions[-1] if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: The one role whose connections need a password (the server trusts every other): for
#: what a wrong password prints.
GUARDED_ROLE, GUARDED_PASSWORD = "guarded", "right-Pass-4711"


@dataclass
class PostgresServer:
    """A PostgreSQL server of the test session's own, on 127.0.0.1:`port`; every role is
    trusted but `GUARDED_ROLE`, which signs in with `GUARDED_PASSWORD`."""

    folder: Path
    port: int
    bin: Path
    as_user: list[str]

    @classmethod
    def start(cls) -> PostgresServer:
        """initdb and start a server; skip (naming the package) without its binaries."""
        found = pg_bin()
        if found is None:
            message = "PostgreSQL's server is not installed: apt-get install postgresql"
            if os.environ.get("CI"):
                pytest.fail(message + " (CI installs it: .ci/run)")
            pytest.skip(message)
        folder = Path(tempfile.mkdtemp(prefix="atom-pg-"))
        as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as its own user
            shutil.chown(folder, "postgres", "postgres")
            as_user = ["runuser", "-u", "postgres", "--"]
        server = cls(folder, _free_port(), found, as_user)
        server._run(
            "initdb", "-D", str(folder / "data"), "-U", "atom", "--auth=trust", "-E", "UTF8"
        )
        hba = folder / "data" / "pg_hba.conf"  # first match wins: the guarded role's line first
        hba.write_text(f"host all {GUARDED_ROLE} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        options = f"-p {server.port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        server._run(
            "pg_ctl", "-D", str(folder / "data"), "-l", str(folder / "log"), "-o", options,
            "-w", "start",
        )  # fmt: skip
        import psycopg

        with psycopg.connect(server.url(), autocommit=True) as connection:
            connection.execute(f"CREATE ROLE {GUARDED_ROLE} LOGIN PASSWORD '{GUARDED_PASSWORD}'")
        return server

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            log = self.folder / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
            raise RuntimeError(f"{tool} failed: {done.stderr or done.stdout}\n{tail}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://atom@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A new, empty database's URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(n: int = 0, *, kind: str = "pytest", commit: str | None = "abc123") -> RunRecord:
    """The `n`th run of a made-up history: one hour after the one before."""
    started = _T0 + timedelta(hours=n)
    return RunRecord(
        id=new_run_id(started),
        started=started,
        kind=kind,
        rescore_of=None,
        commit=commit,
        dirty=n % 2 == 1,
        atom_version="0.1.0",
        claude_version="2.1.332",
        settings={"repeat": 1, "match": "conversation"},
    )


def item(
    spec: str = "calc",
    outcome: str = "passed",
    *,
    case: str | None = None,
    arm: str | None = None,
    repeat: int | None = None,
    digest: str | None = None,
    kind: str = "trial",
    tokens: int = 100,
    cost: float = 0.01,
    spent: float | None = None,
    wall: float = 2.0,
) -> ItemRecord:
    """An item with every field set, so a round trip through a store shows each."""
    return ItemRecord(
        run_id="",
        spec=spec,
        spec_path=f"specs/{spec}.atom.yaml",
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome,
        kind=kind,
        checks=(CheckRow("file_exists out.txt", outcome == "passed", "out.txt is there"),),
        criteria=(CriterionRow("The sum is right", 1.0, True, "the test passes"),),
        tokens={"executor": tokens, "reflector": tokens // 10},
        cost_usd={"executor": cost, "reflector": cost / 10},
        spent_usd=cost * 1.1 if spent is None else spent,
        wall_seconds=wall,
        tool_calls=("Read", "Edit", "Bash"),
        digest=digest,
        digest_parts={"spec": "s1"} if digest else {},
        run_folder=f"/tmp/runs/{spec}",
        why="score 0.9 >= 0.8",
        score=0.9,
    )


def bare_store(url: str) -> SqlStore:
    """The store at `url` opened without migrating it: as an older pytest-atom left it."""
    from pytest_atom.history.postgres import PostgresStore
    from pytest_atom.history.sqlite import SqliteStore

    if url.startswith("postgresql://"):
        return PostgresStore.connect(url, migrate=False)
    return SqliteStore.connect(Path(url), migrate=False)


def write_runs(url: str, writer: int, count: int) -> None:
    """Writer `writer`'s `count` runs of two items each, one store connection for all: what
    one of several concurrent sessions (or shards being imported) does."""
    from pytest_atom.history.store import open_store

    store = open_store(url)
    try:
        for n in range(count):
            store.add_run(run(writer * 1000 + n), [item("calc"), item(f"w{writer}")])
    finally:
        store.close()


def project(root: Path) -> Path:
    """An empty project at `root` (a pytest.ini marks its root); its default store's path."""
    (root / "pytest.ini").write_text("[pytest]\n")
    return root / ".atom" / "history.db"


def fill(
    url: str, outcomes: dict[str, list[str]], *, digests: dict[str, str | None] | None = None
) -> list[RunRecord]:
    """A store with one run per position of the outcome lists, oldest first: spec name ->
    its outcome in each run ("" leaves the spec out of that run)."""
    from pytest_atom.history.store import open_store

    store = open_store(url)
    runs = []
    count = max(len(v) for v in outcomes.values())
    for n in range(count):
        each = run(n)
        items = [
            item(name, said[n], digest=(digests or {}).get(name), tokens=100 + n)
            for name, said in outcomes.items()
            if n < len(said) and said[n]
        ]
        store.add_run(each, items)
        runs.append(each)
    store.close()
    return runs


# --- real sessions: pytest --atom -n 4, two sessions at once, atom run, an unwritable store ---

#: The scenario's specs: (file, name, passes?). Each starts one Claude Code process.
SESSION_SPECS = [
    ("a", "a-one", True),
    ("a", "a-two", False),
    ("b", "b-one", True),
    ("b", "b-two", True),
]


def write_session_project(root: Path) -> None:
    """Two spec files of scripted specs (one writes the wrong file, so fails), in a git
    work tree with a commit, so runs record a commit and a dirty flag."""
    (root / "pytest.ini").write_text("[pytest]\n")
    specs = root / "specs"
    (specs / "scripts").mkdir(parents=True)
    files: dict[str, str] = {}
    for file, name, passes in SESSION_SPECS:
        target = "out.txt" if passes else "wrong.txt"
        (specs / "scripts" / f"{name}.yaml").write_text(
            "turns:\n"
            f"  - tool_use: [{{name: Bash, input: {{command: 'echo hi > {target}'}}}}]\n"
            "  - text: EXIT_LOOP_NOW\n"
        )
        files[file] = files.get(file, "specs:\n") + (
            f"  - name: {name}\n    prompt: Write out.txt.\n"
            f"    script: scripts/{name}.yaml\n    accept: [{{file_exists: out.txt}}]\n"
        )
    for file, text in files.items():
        (specs / f"{file}.atom.yaml").write_text(text)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "specs"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _session(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`pytest --atom ARGS` in `root`, as a process of its own."""
    import sys

    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--atom", "-p", "no:cacheprovider", *args],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def build_sessions(folder: Path, pytester: pytest.Pytester, claude_bin: Path) -> None:
    """The project, and each kind of session over it (their outputs and statuses saved):
    `xdist`: pytest --atom -n 4 of all four specs, with --atom-report (a results.json);
    `first`, `second`: two sessions at once, one spec file each; `atom`: atom run of a.one;
    `unwritable`: a session whose store cannot be made (its parent is a file)."""
    import json

    from click.testing import CliRunner

    from atom_cli.main import main

    root = folder / "project"
    root.mkdir()
    write_session_project(root)
    status: dict[str, int] = {}
    env = {**os.environ, "ATOM_CLAUDE_BIN": str(claude_bin)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
        mp.chdir(root)
        xdist = pytester.runpytest(
            "--atom", "specs", "-p", "no:cacheprovider", "-n", "4", "--atom-report", "report"
        )
        status["xdist"] = int(xdist.ret)
        (folder / "xdist.txt").write_text(xdist.stdout.str())
        both = [_session(root, env, "specs/a.atom.yaml"), _session(root, env, "specs/b.atom.yaml")]
        for name, process in zip(("first", "second"), both, strict=True):
            out, _ = process.communicate(timeout=600)
            status[name] = process.returncode
            (folder / f"{name}.txt").write_text(out)
        edited = root / "specs" / "a.atom.yaml"
        edited.write_text(edited.read_text() + "\n")  # a tracked file changed: a dirty tree
        atom = CliRunner().invoke(main, ["run", "specs/a.atom.yaml"])
        status["atom"] = atom.exit_code
        (folder / "atom.txt").write_text(atom.output)
        (root / "blocked").write_text("a file where the store's folder would be\n")
        blocked = _session(root, env, "specs/b.atom.yaml", "--atom-history", "blocked/history.db")
        out, _ = blocked.communicate(timeout=600)
        status["unwritable"] = blocked.returncode
        (folder / "unwritable.txt").write_text(out)
    (folder / "status.json").write_text(json.dumps(status))
