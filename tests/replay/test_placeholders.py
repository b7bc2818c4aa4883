"""`replay.placeholders`: the one place a run's machine paths become placeholders and back."""

from __future__ import annotations

from pathlib import Path

from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.placeholders import HOME, RUN_DIR, PathMasks, volatile_paths
from pytest_atom.spec_loader.load import parse_specs


def test_a_path_becomes_its_placeholder_only_where_its_name_ends() -> None:
    masks = PathMasks({"/tmp/run": RUN_DIR})
    assert masks.out("cat /tmp/run/a.py /tmp/run2/b.py") == "cat <RUN_DIR>/a.py /tmp/run2/b.py"


def test_the_longest_path_wins_and_a_trailing_slash_masks_only_what_lies_below() -> None:
    masks = PathMasks({"/tmp/run": RUN_DIR, "/tmp/run/home": HOME, "/home/alice/": "<HOME>/"})
    text = "/tmp/run/home/.cache /home/alice/.pyenv /home/alice"
    assert masks.out(text) == "<HOME>/.cache <HOME>/.pyenv /home/alice"


def test_a_placeholder_comes_back_as_the_path_given_first_for_it() -> None:
    """Several spellings of one folder share a placeholder; a replayed answer gets the live
    one, given first (the resolved or glob-escaped spellings after it)."""
    masks = PathMasks({"/tmp/live": RUN_DIR, "/private/tmp/live": RUN_DIR})
    assert masks.into("ls <RUN_DIR>/a") == "ls /tmp/live/a"
    assert masks.out(masks.into("ls <RUN_DIR>/a")) == "ls <RUN_DIR>/a"


def test_paths_added_later_mask_too_and_keep_the_earlier_ones() -> None:
    masks = PathMasks({"/tmp/run": RUN_DIR}).with_paths({"/opt/step": "<STEP>"})
    assert masks.out("/tmp/run/x /opt/step/y") == "<RUN_DIR>/x <STEP>/y"


def test_the_normalizer_masks_paths_through_the_same_table(tmp_path: Path) -> None:
    (spec,) = parse_specs(tmp_path / "s.atom.yaml", "name: s\nprompt: p\n")
    paths = volatile_paths(tmp_path / "run", spec)
    text = f"read {tmp_path}/run/home/notes.txt in {tmp_path}/run"
    normalizer = Normalizer(paths)
    assert normalizer.paths_out(text) == PathMasks(paths).out(text)
    assert normalizer.paths_out(text) == "read <HOME>/notes.txt in <RUN_DIR>"
    assert normalizer.paths_in(normalizer.paths_out(text)) == text
