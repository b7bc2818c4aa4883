"""Stand-in Claude Code releases and a local npm registry for `atom bisect`'s tests: no
network, real parts.

- `LocalRegistry`: an npm registry on 127.0.0.1 serving Claude Code's packument (the
  versions it lists) and the tarballs of stand-in releases; the real `npm` reads it
  (``npm_config_registry``) to list releases and to install one.
- A stand-in release is an npm package named ``@anthropic-ai/claude-code`` at a listed
  version whose `claude` is a shell script that execs a really installed release (2.1.197,
  2.1.332, 2.1.337), with extra arguments when the stand-in changes something: laid out in
  the per-user cache as `atom setup --version` leaves an install (`install_stand_in`), or
  served as a tarball npm installs (`stand_in_tarball`).
- `bisect_scenario`: the shared scenario the CLI tests read: `atom bisect` twice over a
  copy of the shipped create_file spec and its cassette.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shlex
import shutil
import tarfile
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.cli import NPM_PACKAGE
from tests.helpers import REPO

#: What the release that changes the replay adds to the real CLI's arguments: it no longer
#: offers Bash, which the create_file cassette's model answers call (a release that drops
#: or renames a tool is the change a cassette meets).
NO_BASH = ("--disallowedTools", "Bash")


@dataclass(frozen=True)
class StandIn:
    """A listed release: the real `claude` it runs and the arguments it adds."""

    version: str
    real: Path
    extra: tuple[str, ...] = ()


def claude_script(stand_in: StandIn) -> str:
    """The stand-in release's `claude`: the real one, with its extra arguments last."""
    extra = "".join(f" {shlex.quote(arg)}" for arg in stand_in.extra)
    return (
        "#!/bin/sh\n"
        f"# Stand-in Claude Code {stand_in.version} (tests/bisect_helpers.py).\n"
        f'exec {shlex.quote(str(stand_in.real))} "$@"{extra}\n'
    )


def manifest(version: str) -> dict[str, object]:
    return {"name": NPM_PACKAGE, "version": version, "bin": {"claude": "bin/claude"}}


def install_stand_in(cache: Path, stand_in: StandIn) -> Path:
    """`stand_in` laid out in the per-user cache `cache` as npm installs a release there
    (`cached_claude`'s path, a link into the package, its package.json): its `claude`."""
    prefix = cache / "pytest-atom" / "claude-code" / stand_in.version / "node_modules"
    package = prefix / "@anthropic-ai" / "claude-code"
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps(manifest(stand_in.version)))
    script = package / "bin" / "claude"
    script.write_text(claude_script(stand_in), encoding="utf-8")
    script.chmod(0o755)
    (prefix / ".bin").mkdir()
    (prefix / ".bin" / "claude").symlink_to("../@anthropic-ai/claude-code/bin/claude")
    return prefix / ".bin" / "claude"


def stand_in_tarball(stand_in: StandIn) -> bytes:
    """`stand_in` as the .tgz an npm registry serves (its files under ``package/``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        files = {
            "package/package.json": (json.dumps(manifest(stand_in.version)).encode(), 0o644),
            "package/bin/claude": (claude_script(stand_in).encode(), 0o755),
        }
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class LocalRegistry:
    """An npm registry on 127.0.0.1: the packument of Claude Code listing `versions`, and
    the tarballs of `tarballs`; each path asked for is noted in `requests`."""

    def __init__(self, versions: Sequence[str], tarballs: Mapping[str, bytes]) -> None:
        self.versions = list(versions)
        self.tarballs = dict(tarballs)
        self.requests: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def packument(self) -> dict[str, object]:
        versions: dict[str, object] = {}
        for version in self.versions:
            entry: dict[str, object] = manifest(version)
            data = self.tarballs.get(version)
            if data is not None:
                sha512 = base64.b64encode(hashlib.sha512(data).digest()).decode()
                entry["dist"] = {
                    "tarball": f"{self.url}tarballs/{version}.tgz",
                    "shasum": hashlib.sha1(data).hexdigest(),
                    "integrity": f"sha512-{sha512}",
                }
            versions[version] = entry
        return {
            "name": NPM_PACKAGE,
            "dist-tags": {"latest": self.versions[-1]},
            "versions": versions,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                name = self.path.removeprefix("/tarballs/").removesuffix(".tgz")
                if self.path.lower() == "/@anthropic-ai%2fclaude-code":
                    self._send(json.dumps(registry.packument()).encode(), "application/json")
                elif self.path.startswith("/tarballs/") and name in registry.tarballs:
                    self._send(registry.tarballs[name], "application/octet-stream")
                else:
                    self.send_error(404)

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: `requests` says what was asked

        return Handler

    @contextmanager
    def serving(self) -> Iterator[LocalRegistry]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


def npm_environ(registry: LocalRegistry, folder: Path) -> dict[str, str]:
    """npm pointed at `registry`, with a cache of its own in `folder` and no update check."""
    return {
        "npm_config_registry": registry.url,
        "npm_config_cache": str(folder / "npm-cache"),
        "npm_config_update_notifier": "false",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
    }


# --- the shared scenario -------------------------------------------------------------------

#: The scenario's project: the shipped create_file spec and its cassette.
SPEC = "create_file.atom.yaml"
GOOD, BAD = "2.1.197", "2.1.340"
#: The release that first stops offering Bash, and the one the registry alone holds.
FIRST_CHANGE = "2.1.338"


def scenario_releases(reals: Mapping[str, Path]) -> tuple[list[StandIn], list[str]]:
    """The releases of the scenario's registry (installed ones and the one only the
    registry has), and every version it lists: one before --good, a pre-release and one
    after --bad, which bisect must leave out."""
    old, previous, pinned = reals["2.1.197"], reals["2.1.332"], reals["2.1.337"]
    releases = [
        StandIn("2.1.197", old),
        StandIn("2.1.250", old),
        StandIn("2.1.332", previous),
        StandIn("2.1.337", pinned),
        StandIn(FIRST_CHANGE, pinned, NO_BASH),
        StandIn("2.1.339", pinned, NO_BASH),
        StandIn(BAD, pinned, NO_BASH),
    ]
    listed = ["2.1.100", *(r.version for r in releases), "2.1.341-beta.1", "2.1.400"]
    return releases, listed


def bisect_scenario(folder: Path, reals: Mapping[str, Path]) -> None:
    """`atom bisect create_file.atom.yaml` in a copy of the shipped spec, against a local
    registry: --good 2.1.197 --bad 2.1.340 readable (``first``: it installs 2.1.338 from
    the registry), the same with --json (``second``), and --bad 2.1.337, which replays as
    2.1.197 does (``unchanged``); each run's <name>.out, .err and .code. Leaves the
    registry's requests (requests.json) and the per-user cache (cache/)."""
    project = folder / "project"
    project.mkdir()
    shutil.copy(REPO / "fixtures" / "specs" / SPEC, project / SPEC)
    for part in ("scripts/create_file.yaml", "cassettes/create_file/create-file.yaml"):
        (project / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "fixtures" / "specs" / part, project / part)
    releases, listed = scenario_releases(reals)
    cache = folder / "cache"
    for stand_in in releases:
        if stand_in.version != FIRST_CHANGE:
            install_stand_in(cache, stand_in)
    tarballs = {r.version: stand_in_tarball(r) for r in releases if r.version == FIRST_CHANGE}
    registry = LocalRegistry(listed, tarballs)
    env = {**npm_environ(registry, folder), "XDG_CACHE_HOME": str(cache)}
    runs = {
        "first": [GOOD, BAD],
        "second": [GOOD, BAD, "--json"],
        "unchanged": [GOOD, "2.1.337"],
    }
    with registry.serving(), pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        for name, given in runs.items():
            args = ["bisect", SPEC, "--good", given[0], "--bad", given[1], *given[2:]]
            done = CliRunner().invoke(main, args, env=env)
            (folder / f"{name}.out").write_text(done.stdout, encoding="utf-8")
            err = done.stderr
            if done.exception is not None and not isinstance(done.exception, SystemExit):
                err += "".join(traceback.format_exception(done.exception))
            (folder / f"{name}.err").write_text(err, encoding="utf-8")
            (folder / f"{name}.code").write_text(str(done.exit_code))
    (folder / "requests.json").write_text(json.dumps(registry.requests))


def ran(folder: Path, name: str) -> tuple[int, str, str]:
    """A run of the scenario: its exit status, stdout and stderr."""
    code = int((folder / f"{name}.code").read_text())
    read = [(folder / f"{name}.{part}").read_text(encoding="utf-8") for part in ("out", "err")]
    return code, read[0], read[1]
