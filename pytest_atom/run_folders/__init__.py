"""Run folders: what each spec run leaves on disk, how it is named, and when it goes.

Every run of a spec gets a folder of its own under the runs folder::

    .atom/runs/<spec>-<time>-<id>/
        attempts/a01/    the executor works here (a copy of the workspace, set-up run in it)
        attempts/a02/    a refine attempt: a copy of a01, same conversation, with feedback
        committed/       the passing attempt, promoted: hard links, not a second copy
        claude-config/   the CLI's own state (CLAUDE_CONFIG_DIR), secrets scrubbed after the run
        home/            the CLI's HOME (its logs and caches), scrubbed too
        setup/           the `setup:` commands' HOME and temp folder, and its output.log

(a multi-step spec's attempts are under ``steps/<id>/``: `pytest_atom.run.steps`).

Run folders live under the project (``.atom/runs``, or ``--atom-runs-dir``) by default.
That is safe because the agent cannot read upwards from its run folder: the read guard
(agents.claude_code.readguard) keeps the project above the workspace (its ``.env``, the
specs, their cassettes, other runs) out of reach.

`retention` names run folders (the one place that spells the name) and deletes old ones
after a session. Where to add: a new rule for which folders go, in `retention`; what a run
puts in its folder, in `pytest_atom.run`.
"""
