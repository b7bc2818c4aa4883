"""`pytest_atom.audit` on its own: the walk `atom cassette check` renders yields typed
findings, counted in its tally, with no click in the way (a front end other than the
command reads the same facts)."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from pytest_atom.audit.walk import Finding, Tally, audit_cassettes
from tests.helpers import CREATE_FILE, old_cassette


def test_the_walk_yields_typed_findings_and_counts_them(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes" / CREATE_FILE.parent.name
    folder.mkdir(parents=True)
    clean = old_cassette().save(folder / "clean.yaml")
    shutil.copyfile(clean, folder / "clean.partial.yaml")
    data = old_cassette()
    data.interactions[1].request_headers["authorization"] = "Basic " + secrets.token_hex(8)
    leaky = data.save(folder / "leaky.yaml")
    (folder / "broken.yaml").write_bytes(b"\xff\xfe not utf-8")
    empty = tmp_path / "nothing"
    empty.mkdir()

    tally = Tally()
    found = list(audit_cassettes([tmp_path / "cassettes", empty], tally))

    (partial,) = [f for f in found if f.where == str(folder / "clean.partial.yaml")]
    assert partial.kind == "partial" and partial.text.startswith("stale partial recording")
    assert [f.kind for f in found if f.where == str(folder / "broken.yaml")] == ["unreadable"]
    leaks = [f for f in found if f.where == str(leaky)]
    assert leaks and {f.kind for f in leaks} == {"finding"}
    assert any("secret header authorization in request" in f.text for f in leaks)
    assert not any(f.where == str(clean) for f in found)  # a clean cassette has nothing to say
    assert found[-1] == Finding(
        str(empty), "empty", "no cassettes found (no *.yaml under a cassettes/ folder)"
    )
    assert (tally.checked, tally.findings, tally.partials, tally.unreadable) == (
        2,
        len(leaks),
        1,
        1,
    )
