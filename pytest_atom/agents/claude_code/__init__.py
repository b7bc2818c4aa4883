"""Claude Code as an agent: the pinned CLI and its releases, runner, configuration, sandbox.

- `cli`: the pinned version, where a release is installed (`atom setup`) and found.
- `bisect`: `atom bisect`, the first release that changes how a spec's cassette replays,
  over npm's list of releases, installing each it needs as `cli` does.
- `runner` (the CLI as an agent), `configuration`, `sandbox`, `srt`, `readguard`: a session of the CLI;
  `session`, what both it and an Agent SDK app (`pytest_atom.agents.sdk`) run a session with.

Where to add: what is known about a release (its version, how it is installed or
listed) goes in `cli`; a new way a release's replay differs from another's is a field of
`bisect.ItemReplay.behaviour`.
"""
