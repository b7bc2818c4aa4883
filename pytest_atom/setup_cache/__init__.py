"""The set-up cache: what a spec's `setup:` made in its attempt folder, kept per user and
restored offline.

A set-up that creates a virtualenv or runs `npm install` costs minutes and needs a package
registry; a replay would pay that every time. So what set-up added to or changed in the
attempt folder is kept in ``$XDG_CACHE_HOME/pytest-atom/setup/<key>/`` (``~/.cache``
without it), and a later attempt, replay or run with the same key gets it back without
running a command.

The key (`key.setup_key`) holds what decides set-up's result:

- the commands;
- the workspace tree set-up sees: every path of the fresh attempt folder by content, or
  only the files the spec's `setup: {inputs: [...]}` globs match (the user's promise that
  set-up reads no other);
- the toolchain: each executable the commands name, and the usual interpreters and package
  managers (`TOOLS`), as PATH resolves them (real path, size, mtime);
- the environment set-up gets, without the run's own folders (HOME, TMPDIR), the run
  folder's path spelled ``<RUN_DIR>``;
- the attempt folder's place in the run (``attempts/a01``), the platform and this format.

A restore also checks what the key cannot: files set-up changed or deleted must hold the
content they held when it was stored, and no path set-up created may exist yet; and the
entry's files must match the sha256 its manifest holds (`intact`: size and mtime prove
nothing), else the entry is deleted. Otherwise set-up runs and its entry is replaced.

Paths baked in: a virtualenv names its own absolute path (shebangs, ``pyvenv.cfg``), and
every attempt folder has another. The text files and links that name the attempt or run
folder are listed when stored and written afresh with the new paths on restore (a binary
file, such as a ``.pyc``, keeps the old one: its strings are length-prefixed).

Files come back cloned (reflink) or copied, never hard-linked: a write in place in an
attempt (the agent's editor, as root even into a read-only file) would change the entry
and every attempt restored from it. Only the attempt folder is cached: what set-up leaves
in its HOME or a `sandbox.write` folder is not restored, and a set-up that writes into
the attempt's ``.git`` is not kept.

`key` computes the key; `entries` stores, checks, restores, lists and prunes entries;
`pytest_atom.run.setup_commands` runs set-up through them, `atom cache` lists and prunes.
Where to add: a new input of set-up's result goes into `key.setup_key` (and `FORMAT` goes
up by one, so older entries miss); a new check before a restore into `entries.stale`.
"""
