"""`atom doctor`'s probes of a machine, as typed findings the command renders.

`probes` holds each probe (the Claude Code CLI, credentials, the environment a run gets,
Node.js, editable installs of the project, a real CLI run against a scripted gateway, and
Claude Code's sandbox) and `run_probes`, which runs them in order and yields each `Finding`
as it is made, so a slow probe never hides the ones before it.
"""

from __future__ import annotations

from pytest_atom.doctor.probes import Finding, Status, run_probes

__all__ = ["Finding", "Status", "run_probes"]
