"""The environment of every process a run starts, built from parts, never inherited.

A replay must be a function of the cassette, the spec and the workspace. The caller's
environment is none of those: Claude Code derives paths from it (``$XDG_CACHE_HOME``,
``$TMPDIR``) and writes them into its requests and onto disk, and the agent's shell would
see every token and credential the caller has. So no process of a run (the CLI, the SDK
host, `setup:` commands, hooks and MCP servers the CLI starts, checks, project tools) gets
the caller's environment minus a block list; each gets one made of:

1. `DEFAULT_PASS`: the caller's values of the names toolchains need (PATH, locale, TERM,
   proxies, certificates, toolchain roots);
2. the names and globs of `pass_env:` (`.atom/config.yaml`, then the spec's), as tox's
   ``pass_env`` does;
3. `run_folders`: HOME, every XDG base folder and TMPDIR, all inside the run folder, at
   the XDG defaults under that HOME, so the CLI's requests name the same ``<HOME>/.cache``
   on every machine;
4. the spec's `env:` (expanded by the caller) and the harness's own settings, by the caller.

Names pytest-atom sets itself, and the caller's ``ANTHROPIC_*`` / ``CLAUDE_*`` (another
endpoint, another config folder, the caller's credentials) never pass, whatever
`pass_env:` says; a recording's credentials are added explicitly by the recorder.

The same environment is why a failure may be its doing: a caller variable a check or
set-up relied on is left out, a tool the caller's shell found is not on the run's PATH, the
sandbox's proxy refused a host. `environment_clue` and `network_hint` read that from what
the failure printed, so the reports say it only when the output points at the environment.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import re
import shutil
import site
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_atom import digest as digest_module

#: Variables naming a toolchain's root, where PATH's shims find their interpreters: passed
#: by default, and readable by the agent (`agents.claude_code.readguard`).
TOOLCHAIN_ROOTS: tuple[str, ...] = (
    "PYENV_ROOT",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "DOTNET_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "SDKMAN_DIR",
    "ASDF_DIR",
    "BUN_INSTALL",
    "DENO_INSTALL",
)

#: What toolchains need from the caller, passed by default (globs as in `pass_env:`).
DEFAULT_PASS: tuple[str, ...] = (
    "PATH",
    # Locale: a compiler's or a test runner's messages, and Python's own encoding.
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    # Proxies and certificates: the only way out of some networks.
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "PIP_CERT",
    "NIX_SSL_CERT_FILE",
    "AWS_CA_BUNDLE",
    "HTTPLIB2_CA_CERTS",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
    "npm_config_cafile",
    "NPM_CONFIG_CAFILE",
    *TOOLCHAIN_ROOTS,
)

#: Set from the run folder for every process (see `run_folders`); never the caller's.
RUN_FOLDERS: tuple[str, ...] = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
)
#: Set by pytest-atom with fixed values: the same on every machine.
FIXED: dict[str, str] = {
    "TZ": "UTC",  # `date` and the CLI's own date agree on every machine (pass_env: [TZ] keeps yours)
}

#: Never passed from the caller, whatever `pass_env:` says: the CLI's endpoint, config and
#: credentials (pytest-atom sets its own), Bedrock's token, and an outer pytest's settings.
#: Names, or prefixes where they end with `_` or `*`.
NEVER_PASS: tuple[str, ...] = (
    "ANTHROPIC_*",
    "CLAUDE_*",
    "CLAUDECODE*",
    "AWS_BEARER_TOKEN_BEDROCK",
    "PYTEST_*",
    "XDG_RUNTIME_DIR",  # a caller's per-login folder: the CLI would write sockets there
    *RUN_FOLDERS,
)

#: What every process of a run gets in place of each credential Claude Code can use: the
#: CLI, the agent's shell, hooks, MCP servers, set-ups and checks never hold the caller's
#: real key, so nothing they run can print, reverse or send it. When recording, only the
#: gateway holds the real one and puts it in place of the placeholder on the requests it
#: forwards upstream (`replay.upstream.with_credentials`). The OAuth placeholder keeps
#: the prefix by which the CLI tells a subscription token from a key.
CREDENTIAL_PLACEHOLDERS: dict[str, str] = {
    "ANTHROPIC_API_KEY": "atom-offline-placeholder-key",
    "ANTHROPIC_AUTH_TOKEN": "atom-offline-placeholder-token",
    "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-atom-offline-placeholder",
}


def placeholder_credentials(auth: Iterable[str] = ()) -> dict[str, str]:
    """A placeholder under each credential name of `auth` (the recording's, so the CLI
    authenticates the same way), else ANTHROPIC_API_KEY's: all the CLI needs to skip login."""
    names = [name for name in auth if name in CREDENTIAL_PLACEHOLDERS] or ["ANTHROPIC_API_KEY"]
    return {name: CREDENTIAL_PLACEHOLDERS[name] for name in names}


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GLOB = re.compile(r"^[A-Za-z0-9_*?\[\]!]+$")


def never_passed(name: str) -> bool:
    """True for a name pytest-atom sets itself or never takes from the caller."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in NEVER_PASS)


def pass_env_problem(entry: str) -> str | None:
    """Why `entry` is no valid `pass_env:` item (None: it is), as a spec error says it."""
    if not _GLOB.match(entry):
        return f"{entry!r} is not a variable name or a glob of names (letters, digits, _, * ?)"
    if _NAME.match(entry) and never_passed(entry):
        return (
            f"{entry} is never taken from the caller: pytest-atom sets it for the run "
            "(HOME, XDG_*, TMPDIR) or keeps it out (ANTHROPIC_*, CLAUDE_*, PYTEST_*); "
            f"set a value in 'env:' instead, or remove {entry}"
        )
    return None


def passes(name: str, pass_env: Iterable[str] = ()) -> bool:
    """Whether the caller's `name` reaches a run: a default or `pass_env` name or glob."""
    if never_passed(name):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in (*DEFAULT_PASS, *pass_env))


def passed(pass_env: Iterable[str] = (), caller: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's variables that reach a run (default: this process's environment)."""
    source = os.environ if caller is None else caller
    wanted = tuple(pass_env)
    return {k: v for k, v in source.items() if passes(k, wanted)}


def left_out(pass_env: Iterable[str] = (), caller: Mapping[str, str] | None = None) -> list[str]:
    """The sorted names of the caller's variables a run does not get but `pass_env:` could pass."""
    source = os.environ if caller is None else caller
    wanted = tuple(pass_env)
    return sorted(
        k for k in source if k not in FIXED and not never_passed(k) and not passes(k, wanted)
    )


def run_folders(home: Path) -> dict[str, str]:
    """HOME, the XDG base folders (at the XDG defaults under that HOME, so a CLI that honours them
    or not names the same paths) and TMPDIR (``<run>/tmp``, so the CLI's ``$TMPDIR/claude-<uid>``
    folders stay in the run) of a run, under `home` (created here)."""
    folders = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "TMPDIR": home.parent / "tmp",
    }
    folders["TMPDIR"] = _temp_folder(folders["TMPDIR"])
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    out = {k: str(v) for k, v in folders.items()}
    out["TMP"] = out["TEMP"] = out["TMPDIR"]
    return out


#: Claude Code's sandbox binds unix sockets in $TMPDIR (``claude-socks-<16 hex>.sock``);
#: a socket's path holds at most 107 bytes on Linux (103 on macOS).
_SOCKET_NAME = len("/claude-socks-0123456789abcdef.sock")
_SOCKET_PATH_MAX = 103
#: The short temp folders made for this process's runs, with the run temp folder each stands
#: for: `release_tmpdirs` removes a run's when it ends, the rest go when the process exits.
_SHORT: dict[Path, Path] = {}


def tmpdir_for(folder: Path) -> Path:
    """`folder`, or where a socket path in it would be too long, ``/tmp/atom-<hash of folder>``
    (which `volatile_paths` names ``<RUN_DIR>/tmp``). A folder, not a link: the sandbox's read
    guard opens the paths it allows resolved, so a link in /tmp would not exist inside it."""
    if len(os.fsencode(str(folder))) + _SOCKET_NAME <= _SOCKET_PATH_MAX:
        return folder
    digest = digest_module.hex_of(os.fsencode(str(folder)))[:16]
    return Path("/tmp") / f"atom-{digest}"


def _temp_folder(folder: Path) -> Path:
    short = tmpdir_for(folder)
    if short != folder:
        _SHORT[short] = folder
    return short


@atexit.register
def _release_all() -> None:
    release_tmpdirs(Path("/"))


def release_tmpdirs(run_dir: Path) -> None:
    """Remove the short temp folders (`tmpdir_for`) of the run in `run_dir`."""
    for short, folder in list(_SHORT.items()):
        if folder.is_relative_to(run_dir):
            shutil.rmtree(short, ignore_errors=True)
            del _SHORT[short]


def build_env(
    home: Path,
    pass_env: Iterable[str] = (),
    *,
    caller: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The passed caller variables, the fixed ones, the run's folders, then `extra`: later wins."""
    env = passed(pass_env, caller)
    for name, value in FIXED.items():
        env.setdefault(name, value)  # the caller's only where `pass_env:` names it
    env.update(run_folders(home))
    env.update(extra or {})
    return env


#: Values too general to stand for one variable: masking them would eat every path.
_TOO_GENERAL = {"/", "/usr", "/usr/local", "/opt", "/bin", "/usr/bin", "/etc", "/lib", "/var"}


def path_values(env: Mapping[str, str], pass_env: Iterable[str] = ()) -> dict[str, str]:
    """``{value: "<ENV:NAME>"}`` of the passed variables naming a path of this machine, so
    a request that names one reads the same on every machine (lists and ``/usr`` left out)."""
    wanted = tuple(pass_env)
    out: dict[str, str] = {}
    for name, value in sorted(env.items()):
        if name == "PATH" or not passes(name, wanted) or os.pathsep in value:
            continue
        path = value.rstrip("/")
        if path.startswith("/") and path not in _TOO_GENERAL and path.count("/") >= 2:
            out.setdefault(path, f"<ENV:{name}>")
    return out


#: The folder `pytest_atom` is imported from, so a child process imports this same copy.
_IMPORT_ROOT = Path(__file__).resolve().parents[2]


def importable(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with this copy of pytest-atom importable by the Python children it starts itself: a
    checkout used without installing is not importable from another folder, and the caller's
    PYTHONPATH is no part of a run, so its folder is added to ``PYTHONPATH`` (site-packages
    never is: it would shadow the standard library)."""
    out = dict(env)
    site_dirs = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if _IMPORT_ROOT not in site_dirs:
        entries = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(_IMPORT_ROOT) not in entries:
            out["PYTHONPATH"] = os.pathsep.join([*entries, str(_IMPORT_ROOT)])
    return out


def left_out_variables_line(
    pass_env: Iterable[str] = (), caller: Mapping[str, str] | None = None
) -> str | None:
    """One line naming the caller's variables a run did not get and how to pass one, or None."""
    return left_out_names_line(left_out(pass_env, caller))


def left_out_names_line(names: Sequence[str]) -> str | None:
    """`left_out_variables_line` of names already found (a session's runs')."""
    if not names:
        return None
    shown = ", ".join(names[:_SHOWN])
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return (
        f"{len(names)} caller variable{'s' * (len(names) != 1)} left out of the run's "
        f"environment: {shown}{more}. Pass one with `pass_env: [NAME]` (names or globs) in "
        "the spec or .atom/config.yaml"
    )


_SHOWN = 25


# --- whether a failure could be the environment's doing ----------------------------------
#
# Only where its output points there (a command not found, a variable not set): every
# left-out name under every failure would bury the reports.

#: A command the shell could not find, with its name.
_NOT_FOUND = (
    re.compile(r"(?m)(?:^|: )([\w.+/-]+): (?:command )?not found\s*$"),
    re.compile(
        r"(?m)^(?:env|nohup|xargs|exec|timeout): '?([\w.+/-]+)'?: No such file or directory"
    ),
    re.compile(
        r"(?m)^(?:/usr)?(?:/bin/)?(?:ba|da|z)?sh: (?:line \d+: )?([\w.+/-]+): No such file or directory"
    ),
    re.compile(r"executable file not found in \$PATH.*?\"?([\w.+/-]+)\"?"),
    re.compile(r"spawn ([\w.+/-]+) ENOENT"),
)
#: A variable a process found unset, with its name.
_UNSET = (
    re.compile(
        r"\b([A-Za-z_]\w*): (?:unbound variable|parameter not set|parameter null or not set)"
    ),
    re.compile(r"KeyError: ['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"environ(?:\.get)?[\[(]\s*['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"getenv\(\s*['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"process\.env(?:\.([A-Za-z_]\w*)|\[['\"]([A-Za-z_]\w*)['\"]\])"),
    re.compile(r"\b([A-Z][A-Z0-9_]{2,}) (?:is not set|is unset|not set|must be set|is required)"),
)
_EXIT_127 = re.compile(r"\bexit(?:ed| code|status)?:? 127\b")


@dataclass(frozen=True)
class EnvironmentClue:
    """What in a failure's output points at the run's environment."""

    #: The line that says so, quoted in the report (``mytool: command not found``).
    quote: str
    #: Caller variables the run left out that the output names: `pass_env:` brings them.
    left_out: tuple[str, ...] = ()
    #: Variables the output found unset that the caller has not either: `env:` sets them.
    unset: tuple[str, ...] = ()
    #: A command that was not found (on the run's PATH, which is built from parts).
    command: str | None = None


def environment_clue(
    text: str, left_out: Iterable[str], present: Iterable[str] = ()
) -> EnvironmentClue | None:
    """The clue in a failed check's or set-up's output `text` that the environment caused
    it (a variable in `present`, which the run had, is none); None when it points elsewhere."""
    dropped, given = set(left_out), set(present) - set(left_out)
    first: dict[str, str] = {}  # each variable named unset: the line that names it
    for pattern in _UNSET:
        for match in pattern.finditer(text):
            name = next(g for g in match.groups() if g)
            first.setdefault(name, _line_of(text, match.start()))
    passing = tuple(n for n in first if n in dropped)
    unset = tuple(n for n in first if n not in dropped | given and n.isupper())
    quote = first[(passing or unset)[0]] if passing or unset else ""
    command = None
    found = next((m for m in (p.search(text) for p in _NOT_FOUND) if m), None)
    if found is not None:
        command = found.group(1)
        quote = quote or _line_of(text, found.start(1))
    if command is None and _EXIT_127.search(text):
        command = ""
        quote = quote or "exit code 127 (command not found)"
    if not (passing or unset or command is not None):
        return None
    return EnvironmentClue(quote, passing, unset, command or None)


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)].strip()[:200]


#: What the sandbox's proxy says to a host not in `sandbox.network`, as pip, npm and curl
#: quote it.
_PROXY_REFUSED = re.compile(
    r"not on the allow list|Tunnel connection failed: 403|CONNECT tunnel failed, response 403"
    r"|Cannot connect to proxy|ProxyError"
)
#: A host a command tried to reach: a URL's (``https://registry.npmjs.org/x``), its port kept.
_URL = re.compile(r"\b(?:https?|wss?)://(?:[^@/\s'\"]*@)?([A-Za-z0-9][A-Za-z0-9.-]*)(:\d+)?")
#: The hosts a package manager reaches when its output names none (pip's retries name a path).
_DEFAULT_HOSTS = (
    (re.compile(r"\b(pip3?|uv|poetry|pipenv)\b"), ("pypi.org", "files.pythonhosted.org")),
    (re.compile(r"\b(npm|npx|yarn|pnpm)\b"), ("registry.npmjs.org",)),
)


def network_hint(output: str, command: str, what: str = "set-up") -> str | None:
    """The hosts the sandbox's proxy refused and the spec key that allows them; None: no refusal."""
    if not _PROXY_REFUSED.search(output):
        return None
    hosts = [
        host + (port or "")
        for host, port in _URL.findall(output)
        if host not in ("localhost", "127.0.0.1") or port not in (":3128", ":1080")
    ]
    if not hosts:
        hosts = next((list(h) for tool, h in _DEFAULT_HOSTS if tool.search(command)), [])
    hosts = list(dict.fromkeys(hosts))
    if not hosts:
        return (
            f"the sandbox refused its network access: the {what} reaches only the hosts the "
            "spec's `sandbox: {network: [HOST]}` names; add the host it needs there"
        )
    return (
        f"the sandbox refused its network access to {', '.join(hosts)}: the {what} reaches "
        f"only the hosts the spec allows; add `sandbox: {{network: [{', '.join(hosts)}]}}` "
        "to the spec"
    )
