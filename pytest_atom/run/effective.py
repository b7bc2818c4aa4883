"""A spec as it runs in its project: its own limits over the project's, the project's
`pass_env:` in front of its own.

Light on purpose (no gateway, no agents): the run (`run.spec_run`), the outcome cache's
input digest (`history.digest`) and `atom cassette secrets` all read a spec this way, and
the cache must not load the machinery of a run it may never start.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_atom.cost.limits import Limits

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig
    from pytest_atom.spec.types import Spec

__all__ = ["with_limits"]


def with_limits(spec: Spec, config: AtomConfig | None) -> Spec:
    """`spec` with its effective limits: its own over the project's defaults, per key.

    The timeout is the spec's (``limits.timeout``, else its top-level ``timeout``), else the
    project's ``limits.timeout``, else the default 600 s; `Spec.timeout` carries it too, so
    every report names the timeout that applied.
    """
    limits = spec.limits.over(config.limits if config is not None else Limits())
    timeout = limits.timeout if limits.timeout is not None else spec.timeout
    # The project's `pass_env:` first, the spec's added (as tox's pass_env).
    passed = tuple(dict.fromkeys([*(config.pass_env if config else ()), *spec.pass_env]))
    return replace(spec, limits=replace(limits, timeout=timeout), timeout=timeout, pass_env=passed)
