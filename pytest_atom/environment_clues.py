"""Whether a failure could be the environment's doing, read from what the failure printed.

A run's processes get an environment built from parts (environment), so a caller
variable a check or set-up relied on is not there, and a tool the caller's shell found may
not be on the run's PATH. Saying so under every failure buried the reports in a list of
twenty names that had nothing to do with most failures; so the reports say it only when the
output points at the environment:

- a command that was not found (``mytool: command not found``, ``sh: 1: mytool: not found``,
  ``env: 'mytool': No such file or directory``, an exit code of 127);
- a variable that was not set (``FOO: unbound variable``, ``KeyError: 'FOO'``,
  ``os.environ['FOO']``, ``process.env.FOO``, ``FOO is not set``).

A set-up or check the sandbox's proxy kept off the network is named too (`network_hint`):
the host it wanted and the ``sandbox: {network: [host]}`` that lets it through.

A leaf of the model: plain text in, a typed clue out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

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
    """The clue in `text` (a failed check's or set-up's output) that the run's environment
    caused the failure, `left_out` being the caller variables the run did not get and
    `present` the names it did (a variable it had is no clue); None when the output points
    elsewhere."""
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


#: What the sandbox's proxy says to a host not in `sandbox.network`, as tools quote it: pip
#: (``ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 host is
#: not on the allow list'))``), npm (``403 host is not on the allow list - GET <url>``), curl
#: (``CONNECT tunnel failed, response 403``).
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
    """Which allowance a set-up (or a check: `what`) lacks when the sandbox's proxy refused
    it a host: the hosts its output names (or its package manager's registry) and the spec
    key that allows them; None when the output shows no refusal."""
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
