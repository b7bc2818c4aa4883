"""The environment a spec's run gets: ``env:`` with ``${VAR}`` expanded, and the
names the harness reserves for itself."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pytest_atom.environment import RUN_FOLDERS
from pytest_atom.errors import EnvError
from pytest_atom.settings.interpolate import UnsetVariable, expand
from pytest_atom.spec.types import Spec

RESERVED_ENV: tuple[str, ...] = (
    "ANTHROPIC_",
    "CLAUDE_",
    "CLAUDECODE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "HOME",
    *RUN_FOLDERS,  # XDG_*, TMPDIR: the run's own folders (environment.py)
    "GIT_CEILING_DIRECTORIES",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
)


def reserved_env(name: str) -> bool:
    return any(name.startswith(r) if r.endswith("_") else name == r for r in RESERVED_ENV)


def expand_env(spec: Spec, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The spec's `env:` expanded from `environ` (default: the process's) by
    `settings.interpolate`'s rules; EnvError for an unset ``${VAR}``. A value drawn from a
    secret-looking variable stays a secret: every `Scrubber` reads the caller's environment."""
    source = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key, value in spec.env.items():
        try:
            out[key] = expand(value, source)
        except UnsetVariable as unset:
            name = unset.name
            raise EnvError(
                f"spec '{spec.name}' ({spec.path.name}) sets env {key} from ${{{name}}}, which "
                f"is not set: export {name}, or give a default: ${{{name}:-value}}"
            ) from None
    return out
