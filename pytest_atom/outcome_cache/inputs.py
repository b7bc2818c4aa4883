"""The inputs of the outcome cache's digest that are files and folders, found where the run
finds them, each one named part, so `atom history why` names the file or folder that changed:

- ``code PATH``: each top-level package or module loaded in pytest's process that is not
  the standard library, by its ``.py`` and extension files; the libraries pytest-atom
  requires as ``code dist:NAME``, by their ``RECORD``; an SDK app's code;
- ``file PATH``: every file the spec names or its run resolves: the files its checks name,
  its oracle, its CLAUDE.md file, the prompt folders the run searches, and files an MCP
  server or hook command names by absolute path;
- ``toolchain PATH``: each folder on the run's PATH, and the ``site-packages`` and
  ``node_modules`` beside them, by each entry's path, size and mtime (`digest.stat_tree`).

What the digest cannot see (`unseen`): a network the sandbox opens, a command outside the
sandbox, a service reached by URL; such an item is not taken from the cache unless its spec
trusts it (``cache: {trust: [...]}``). Paths under the project's root are named relative to
it, others absolutely.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom import digest
from pytest_atom.files import CACHE_DIRS

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig
    from pytest_atom.spec.types import Spec

#: What a spec may trust the cache with (``cache: {trust: [...]}``), each an input the
#: digest cannot see.
TRUSTS: Mapping[str, str] = {
    "network": "the sandbox lets its commands reach the network (sandbox: network:)",
    "unsandboxed": "a command runs outside the sandbox (sandbox: false, unsandboxed: true)",
    "services": "an MCP server is reached by URL, a service outside the run",
}
#: The files a code part hashes in a package folder: Python source and extension modules.
CODE_SUFFIXES = (".py", ".so", ".pyd")
#: The package folders beside a PATH folder's prefix (``PREFIX/lib/...``).
_PACKAGE_FOLDERS = ("python*/site-packages", "python*/dist-packages", "node_modules")
#: Modules that are no library: the script Python runs.
_SCRIPTS = ("__main__", "__mp_main__")


def label(path: Path, root: Path | None) -> str:
    """`path` as a part names it: relative to `root` when under it, else absolute."""
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


class Reads:
    """One session's memo of the code, toolchain folders and prompt folders it walked once."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._code: dict[str, str] | None = None
        self._trees: dict[Path, str] = {}
        self._folders: dict[Path, str] = {}

    def code(self) -> dict[str, str]:
        """``code`` parts of the code in this process, taken on first use: pytest-atom's own package
        by content, its required distributions by their ``RECORD`` (loaded or not, so a report
        format's imports change nothing), and, once what running a spec imports is loaded, every
        other module loaded: conftest files, plugins, check kinds and what they import."""
        from pytest_atom.run.harness import Harness

        if self._code is None:
            Harness.load_machinery()
            own = Path(__file__).resolve().parent.parent
            names = required()
            found = {f"code dist:{name}": record_hash(name) for name in names}
            found[f"code {label(own, self.root)}"] = code_hash(own)
            covered = {own, *required_places(names)}
            for place in sorted(loaded_code()):
                if place.resolve() not in covered:
                    found[f"code {label(place, self.root)}"] = code_hash(place)
            self._code = found
        return dict(self._code)

    def code_at(self, labels: Sequence[str]) -> dict[str, str]:
        """``code`` parts for the code a stored item named, hashed now (for `atom history why`)."""
        return {
            f"code {name}": (
                record_hash(name[5:])
                if name.startswith("dist:")
                else code_hash(Path(name) if self.root is None else self.root / name)
            )
            for name in labels
        }

    def file_or_folder(self, path: Path) -> str:
        """A file by its bytes (`digest.content`), a folder by its files: walked once a session."""
        if not path.is_dir():
            return digest.content(path)
        if path not in self._folders:
            self._folders[path] = digest.files_hash(path, CACHE_DIRS)
        return self._folders[path]

    def toolchain(self, path_value: str) -> dict[str, str]:
        """``toolchain PATH`` parts of `path_value`'s `toolchain_folders`, walked once a session."""
        found: dict[str, str] = {}
        for folder in toolchain_folders(path_value):
            if folder not in self._trees:
                self._trees[folder] = digest.stat_tree(folder)
            found[f"toolchain {folder}"] = self._trees[folder]
        return found


#: The distribution whose requirements `required` follows.
_OWN = "pytest-atom"


def required() -> list[str]:
    """The distributions pytest-atom requires, directly or not (extras aside), by name."""
    from importlib import metadata

    found: dict[str, None] = {}
    todo = [_OWN]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        found[key] = None
        todo += [m.group(0) for r in requires if "extra" not in r for m in [_NAME.match(r)] if m]
    return sorted(n for n in found if n != _OWN)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def record_hash(name: str) -> str:
    """An installed distribution by its ``RECORD``; ``absent`` when it is not installed."""
    from importlib import metadata

    try:
        record = metadata.distribution(name).read_text("RECORD")
    except metadata.PackageNotFoundError:
        return "absent"
    return digest.of_text(record or "")


def required_places(names: Sequence[str]) -> set[Path]:
    """The top-level packages and modules of the distributions `names`, resolved."""
    from importlib import metadata

    places: set[Path] = set()
    for name in names:
        dist = metadata.distribution(name)
        tops = {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}
        places.update(Path(str(dist.locate_file(top))).resolve() for top in tops)
    return places


def loaded_code() -> set[Path]:
    """Each top-level package folder or module file loaded in this process, outside the
    standard library: (its sys.path entry, its first component), or the file itself."""
    entries = sorted({os.path.abspath(p or ".") for p in sys.path}, key=len, reverse=True)
    places: set[Path] = set()
    for name, module in list(sys.modules.items()):
        top = name.partition(".")[0]
        file = getattr(module, "__file__", None)
        if not file or top in sys.stdlib_module_names or top in _SCRIPTS:
            continue
        path = os.path.abspath(file)
        if not os.path.isfile(path):
            continue
        entry = next((e for e in entries if path.startswith(e + os.sep)), None)
        first = path[len(entry) + 1 :].split(os.sep)[0] if entry else ""
        places.add(Path(entry, first) if entry else Path(path))
    return places


def code_hash(place: Path) -> str:
    """A module file's bytes, or a package folder's code files by relative path and bytes."""
    if not place.is_dir():
        return digest.content(place)
    files = sorted(
        Path(base, name)
        for base, dirs, names in os.walk(place)
        if not set(Path(base).relative_to(place).parts) & set(CACHE_DIRS)
        for name in names
        if name.endswith(CODE_SUFFIXES)
    )
    return digest.of_value([[f.relative_to(place).as_posix(), digest.content(f)] for f in files])


def toolchain_folders(path_value: str) -> list[Path]:
    """The folders on a PATH value, each followed by its prefix's package folders
    (site-packages, dist-packages, node_modules): what the run's interpreters import."""
    found: dict[Path, Path] = {}  # by the real folder: /bin and /usr/bin are often one
    for entry in path_value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        folder = Path(entry)
        lib = folder.parent / "lib"
        beside = [p for pattern in _PACKAGE_FOLDERS for p in sorted(lib.glob(pattern))]
        for place in (folder, *beside):
            if place.is_dir():
                found.setdefault(place.resolve(), place)
    return list(found.values())


def resolved_files(
    spec: Spec, project_dir: Path | None, config: AtomConfig | None, reads: Reads
) -> dict[str, str]:
    """``file PATH`` parts: each file the spec names or its run resolves (a folder by its files)."""
    from pytest_atom.run.spec_run import prompt_loader

    named: dict[Path, None] = {}
    checks = [*spec.accept, *(c for step in spec.steps for c in step.accept)]
    for check in checks:
        named.update(dict.fromkeys(p for p in _leaves(check.params) if isinstance(p, Path)))
    for path in (spec.oracle, spec.claude.claude_md_file):
        if path is not None:
            named[path] = None
    for folder in prompt_loader(spec, project_dir, config).search_paths:
        named[folder] = None
    named.update(dict.fromkeys(_named_by_commands(spec)))
    return {f"file {label(p, project_dir)}": reads.file_or_folder(p) for p in named}


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _named_by_commands(spec: Spec) -> Iterator[Path]:
    """Files an MCP server's or a hook's command names by absolute path."""
    options = spec.claude
    values: list[Any] = [options.mcp_servers or {}, options.hooks or {}]
    values.append((options.settings or {}).get("hooks") or {})
    for text in (v for v in _leaves(values) if isinstance(v, str)):
        for word in text.split():
            if word.startswith("/") and os.path.isfile(word):
                yield Path(word)


def unseen(spec: Spec) -> list[str]:
    """What the spec's run can reach that the digest cannot see, and the spec does not
    trust (`TRUSTS`): an item with any is never taken from the cache."""
    found: list[str] = []
    if spec.sandbox is not None and spec.sandbox.network:
        found.append("network")
    checks = [*spec.accept, *(c for step in spec.steps for c in step.accept)]
    if spec.sandbox is None or any(c.params.get("unsandboxed") for c in checks):
        found.append("unsandboxed")
    servers = (spec.claude.mcp_servers or {}).values()
    if any("url" in entry or entry.get("type", "stdio") != "stdio" for entry in servers):
        found.append("services")
    return [name for name in found if name not in spec.cache_trust]
