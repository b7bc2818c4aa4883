"""`atom history why SPEC`: which inputs of a spec's items changed since their last stored
outcome, so a user knows whether ``--atom-cache`` will report them or run them, and why.

For each item (case, arm, repeat) of the spec, the last run that ran it in the store is
compared with its input digest now, part by part. The code parts are hashed at the places
the stored item named: this process loaded other code than pytest's. An item stored without
a digest is unknown: every part counts as changed, never "unchanged". An item the cache
never serves says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.errors import AtomError, HistoryError
from pytest_atom.history.records import series_label
from pytest_atom.history.write import identity
from pytest_atom.outcome_cache.cache import OK_OUTCOMES
from pytest_atom.outcome_cache.input_digest import PARTS, InputDigest, describe
from pytest_atom.paths import SPEC_SUFFIX

if TYPE_CHECKING:
    from pytest_atom.history.records import ItemRecord
    from pytest_atom.history.store import Store
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec

#: An item's digest now: (spec, repeat, the code places to hash: a stored item's, None:
#: this process's) -> its digest, None when an input cannot be read.
DigestOf = Callable[["Spec", "int | None", "Sequence[str] | None"], "InputDigest | None"]
#: Why an item is never served from the cache, or "" (`cache.uncacheable`).
Blocked = Callable[["Spec"], str]


@dataclass(frozen=True)
class ItemWhy:
    """One item: its last stored record, the parts changed since, whether the cache serves it."""

    spec: str
    case: str | None
    arm: str | None
    repeat: int | None
    stored: ItemRecord | None
    changed: tuple[str, ...]
    #: The digest could not be computed now: an input the run itself would refuse.
    unreadable: bool = False
    #: Why the cache never serves it, whatever changed (`cache.uncacheable`), or "".
    blocked: str = ""

    @property
    def cached_now(self) -> bool:
        """Whether ``--atom-cache`` would report the stored outcome (a repeat: with its series)."""
        return (
            self.stored is not None
            and not self.changed
            and not self.unreadable
            and not self.blocked
            and self.stored.outcome in OK_OUTCOMES
        )

    def line(self) -> str:
        """``create-file: changed since run … (passed): workspace, cassette``."""
        name = series_label((self.spec, self.case, self.arm), self.repeat)
        if self.blocked:
            return f"{name}: --atom-cache always runs it: {self.blocked}"
        if self.stored is None:
            return f"{name}: no stored outcome: it runs"
        since = f"run {self.stored.run_id} ({self.stored.outcome})"
        if self.unreadable:
            return f"{name}: its inputs cannot be read now (running it says why); last: {since}"
        if self.stored.digest is None:
            return f"{name}: {since} was stored without an input digest: unknown, it runs"
        if not self.changed:
            then = (
                "--atom-cache reports it from the store"
                if self.cached_now
                else "it did not pass, so --atom-cache runs it"
            )
            return f"{name}: nothing changed since {since}: {then}"
        parts = ", ".join(f"{p} ({describe(p)})" for p in self.changed)
        return f"{name}: changed since {since}: {parts}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "case": self.case,
            "arm": self.arm,
            "repeat": self.repeat,
            "run_id": self.stored.run_id if self.stored else None,
            "outcome": self.stored.outcome if self.stored else None,
            "changed": list(self.changed),
            "unreadable": self.unreadable,
            "blocked": self.blocked,
            "cached_now": self.cached_now,
        }


def specs_named(store: Store, name: str, load: Callable[[Path], list[Spec]]) -> list[Spec]:
    """The specs `name` stands for: a spec file's, else the specs of that base name, loaded
    from the files the store last ran them from; HistoryError when there are none."""
    given = Path(name)
    if name.endswith(SPEC_SUFFIX) and given.is_file():
        return load(given)
    files: dict[Path, None] = {}
    for series in store.series(name):
        for item in store.item_history(*series, limit=1):
            files[Path(item.spec_path)] = None
    if not files:
        raise HistoryError(
            f"no spec {name!r} in the history store {store.url}: name a spec the store holds "
            "(`atom history` lists them) or a spec file (specs/x.atom.yaml)"
        )
    found = [spec for file in files if file.is_file() for spec in load(file)]
    return [spec for spec in found if identity(spec)[0] == name]


def why_items(
    store: Store,
    specs: Sequence[Spec],
    digest_of: DigestOf,
    repeats: int = 1,
    blocked: Blocked = lambda spec: "",
) -> list[ItemWhy]:
    """Each item of `specs` against its last stored run; `blocked`: why the cache never serves."""
    out: list[ItemWhy] = []
    for spec in specs:
        name, case, arm = identity(spec)
        last = store.item_history(name, case, arm, limit=1)
        numbers: list[int | None] = [i.repeat for i in last] or (
            [None] if repeats == 1 else list(range(1, repeats + 1))
        )
        by_repeat = {i.repeat: i for i in last}
        for repeat in numbers:
            found = _item_why(spec, repeat, by_repeat.get(repeat), digest_of)
            out.append(replace(found, blocked=blocked(spec)))
    return out


def _item_why(
    spec: Spec, repeat: int | None, stored: ItemRecord | None, digest_of: DigestOf
) -> ItemWhy:
    name, case, arm = identity(spec)
    code = None if stored is None else [p[5:] for p in stored.digest_parts if p.startswith("code ")]
    try:
        now = digest_of(spec, repeat, code)
    except AtomError:
        now = None
    if stored is None or now is None:
        return ItemWhy(name, case, arm, repeat, stored, (), unreadable=now is None)
    changed = tuple(PARTS) if stored.digest is None else tuple(now.changed(stored.digest_parts))
    return ItemWhy(name, case, arm, repeat, stored, changed)


def why_now(harness: Harness, name: str) -> tuple[str, list[ItemWhy]]:
    """The store `harness`'s settings name, and each item of spec `name` against its last stored
    run, digested now as a session would but for the code the stored item named. HistoryError
    when the store is off or cannot be read."""
    from pytest_atom.history.store import open_store
    from pytest_atom.history.urls import OFF, store_url
    from pytest_atom.outcome_cache.cache import uncacheable
    from pytest_atom.outcome_cache.input_digest import input_digest
    from pytest_atom.outcome_cache.inputs import Reads
    from pytest_atom.spec_loader.load import load_specs

    settings, root = harness.settings, harness.root
    url = store_url(settings.history, root)
    if url == OFF:
        raise HistoryError("the history store is off (--atom-history none): pass --history URL")
    kinds = harness.registry().kinds()
    reads = Reads(harness.config.root)

    def digest_of(spec: Spec, repeat: int | None, code: Sequence[str] | None) -> InputDigest:
        return input_digest(
            spec,
            settings,
            config=harness.config,
            runs_dir=harness.runs_dir,
            repeat=repeat,
            reads=reads,
            code_at=code or [],
        )

    store = open_store(url, root)
    try:
        specs = specs_named(store, name, lambda file: load_specs(file, check_kinds=kinds))
        return url, why_items(
            store, specs, digest_of, settings.repeat, lambda s: uncacheable(s, settings)
        )
    finally:
        store.close()
