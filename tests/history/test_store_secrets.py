"""A history store's password never reaches any output, and a store file planted in the
project never leads SQLite elsewhere.

A password can sit in a PostgreSQL URL's userinfo, in a ``password=`` parameter, in
``PGPASSWORD`` or in a passfile; libpq's own messages may repeat what it parsed. Each form
is driven through `atom history --history URL` against the test session's real server with a
wrong password, and the printed output is read whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_atom.errors import HistoryError
from pytest_atom.history.postgres import PostgresStore
from pytest_atom.history.store import open_store
from pytest_atom.history.urls import display_url
from tests.history_helpers import GUARDED_PASSWORD, GUARDED_ROLE, PostgresServer

WRONG = "wrong-Pass-0815"


def _printed(url: str, tmp_path: Path, **env: str) -> str:
    """What `atom history --history URL` prints (stdout and stderr), in a bare project."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "atom"), "history", "--history", url],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def _guarded(server: PostgresServer, userinfo: str, query: str = "") -> str:
    return f"postgresql://{userinfo}@127.0.0.1:{server.port}/postgres{query}"


def test_the_guarded_role_signs_in_with_its_password(postgres_server: PostgresServer) -> None:
    """The server refuses a wrong password only because it checks the right one."""
    url = _guarded(postgres_server, f"{GUARDED_ROLE}:{GUARDED_PASSWORD}")
    PostgresStore.connect(url, migrate=False).close()


@pytest.mark.parametrize(
    ("userinfo", "query"),
    [
        (f"{GUARDED_ROLE}:{WRONG}", ""),
        (GUARDED_ROLE, f"?password={WRONG}"),
        (GUARDED_ROLE, f"?connect_timeout=5&password={WRONG}&application_name=atom"),
        (f"{GUARDED_ROLE}:{WRONG}", f"?sslmode=disable&password={WRONG}"),
    ],
    ids=["userinfo", "password-parameter", "parameter-among-others", "both"],
)
def test_a_wrong_password_in_the_url_is_never_printed(
    postgres_server: PostgresServer, tmp_path: Path, userinfo: str, query: str
) -> None:
    printed = _printed(_guarded(postgres_server, userinfo, query), tmp_path)
    assert "password authentication failed" in printed  # the server's refusal is shown
    assert WRONG not in printed and WRONG[:8] not in printed and WRONG[-8:] not in printed
    assert f"{GUARDED_ROLE}" in printed and "***" in printed


def test_an_unencoded_at_sign_in_the_password_is_refused_before_the_driver_sees_it(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """libpq ends the userinfo at its first ``@``: the password's tail would become the host,
    and its "could not translate host name" message would print it."""
    password = "Ab3d@tail-Of-It-99"
    printed = _printed(_guarded(postgres_server, f"{GUARDED_ROLE}:{password}"), tmp_path)
    assert "percent-encode them (@ as %40" in printed
    for part in (password, "Ab3d", "tail-Of-It-99", GUARDED_ROLE):
        assert part not in printed
    with pytest.raises(HistoryError, match="percent-encode"):
        open_store(_guarded(postgres_server, f"{GUARDED_ROLE}:a/b@c"))


def test_a_password_from_pgpassword_is_named_not_shown(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    printed = _printed(_guarded(postgres_server, GUARDED_ROLE), tmp_path, PGPASSWORD=WRONG)
    assert "password authentication failed" in printed
    assert "its password from PGPASSWORD" in printed and WRONG not in printed


def test_a_passfile_is_named_and_its_content_never_shown(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:*:{GUARDED_ROLE}:{WRONG}\n")
    passfile.chmod(0o600)
    url = _guarded(postgres_server, GUARDED_ROLE, f"?passfile={passfile}")
    printed = _printed(url, tmp_path)
    assert "password authentication failed" in printed
    assert f"its password from the passfile {passfile}" in printed and WRONG not in printed
    printed = _printed(_guarded(postgres_server, GUARDED_ROLE), tmp_path, PGPASSFILE=str(passfile))
    assert f"passfile {passfile} (PGPASSFILE)" in printed and WRONG not in printed


def test_display_masks_every_password_parameter_and_keeps_the_rest() -> None:
    url = "postgresql://u:pw-123456@h:5/db?sslmode=require&password=p2-123456&sslpassword=k-1234"
    assert display_url(url) == (
        "postgresql://u:***@h:5/db?sslmode=require&password=***&sslpassword=***"
    )
    assert display_url("postgresql://u@h/db?passfile=/etc/pgpass") == (
        "postgresql://u@h/db?passfile=/etc/pgpass"
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:Ab3d@tail-99@h/db",  # libpq's userinfo ends at the first @
        "postgresql://u:Ab3d/tail-99@h/db",  # and at the first /
        "postgresql://u:Ab3d/ta?il-99@h/db",
    ],
)
def test_a_password_libpq_would_split_is_refused_showing_none_of_it(url: str) -> None:
    with pytest.raises(HistoryError, match="percent-encode") as caught:
        open_store(url)
    assert "Ab3d" not in str(caught.value) and "il-99" not in str(caught.value)
    assert "postgresql://***@h/db" in str(caught.value)


def test_a_question_mark_in_a_password_is_part_of_it_and_masked() -> None:
    assert display_url("postgresql://u:pa?ss-1234@h/db") == "postgresql://u:***@h/db"
    kept = "postgresql://h:5/db?application_name=ci@runner"  # an @ in a parameter is no password
    assert display_url(kept) == kept


# --- the SQLite store's path ------------------------------------------------------------


def test_a_store_link_leading_out_of_the_project_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "project", tmp_path / "elsewhere"
    (root / ".atom").mkdir(parents=True)
    outside.mkdir()
    (root / ".atom" / "history.db").symlink_to(outside / "planted.db")
    with pytest.raises(HistoryError) as caught:
        open_store(".atom/history.db", root)
    assert "leads out of the project" in str(caught.value)
    assert str(root / ".atom" / "history.db") in str(caught.value)
    assert not (outside / "planted.db").exists()


def test_a_folder_link_on_the_way_or_a_side_file_link_is_refused_too(tmp_path: Path) -> None:
    root, outside = tmp_path / "project", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / ".atom").symlink_to(outside)
    with pytest.raises(HistoryError, match="leads out of the project"):
        open_store(".atom/history.db", root)
    assert list(outside.iterdir()) == []
    (root / ".atom").unlink()
    (root / ".atom").mkdir()
    (root / ".atom" / "history.db-wal").symlink_to(outside / "wal")
    with pytest.raises(HistoryError, match=r"history\.db-wal leads out of the project"):
        open_store(".atom/history.db", root)
    assert list(outside.iterdir()) == []


def test_a_special_file_at_the_store_is_refused_and_a_link_inside_followed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    (root / ".atom").mkdir(parents=True)
    os.mkfifo(root / ".atom" / "history.db")
    with pytest.raises(HistoryError, match=r"is a FIFO \(named pipe\), not a SQLite file"):
        open_store(".atom/history.db", root)
    (root / ".atom" / "history.db").unlink()
    (root / ".atom" / "history.db").mkdir()
    with pytest.raises(HistoryError, match="is a folder"):
        open_store(".atom/history.db", root)
    (root / ".atom" / "history.db").rmdir()
    (root / "store.db").touch()
    (root / ".atom" / "history.db").symlink_to(root / "store.db")
    open_store(".atom/history.db", root).close()  # inside the project: followed
    assert (root / "store.db").stat().st_size > 0
