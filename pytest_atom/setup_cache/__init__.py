"""The set-up cache: what a spec's `setup:` made in its attempt folder, kept per user and
restored offline.

A set-up that creates a virtualenv or runs `npm install` costs a minute or two and needs a
package registry; a replay would pay that every time. So what set-up added to or changed in
the attempt folder (a virtualenv, ``node_modules``, a build) is kept in
``$XDG_CACHE_HOME/pytest-atom/setup/<key>/`` (``~/.cache`` without it, like the Claude Code
releases `atom setup` installs), and a later attempt, replay or run with the same key gets
it back without running a command.

The key (`key.setup_key`) holds what decides set-up's result:

- the commands;
- the workspace tree set-up sees: every path of the fresh attempt folder by content, or
  only the files the spec's `setup: {inputs: [...]}` globs match (the user's promise that
  set-up reads no other);
- the toolchain: each executable the commands name, and the usual interpreters and package
  managers (`TOOLS`), as the environment's PATH resolves them (real path, size, mtime);
- the environment set-up gets, built from parts (environment.py), without the run's
  own folders (HOME, TMPDIR), the run folder's path spelled ``<RUN_DIR>``;
- the attempt folder's place in the run (``attempts/a01``), the platform and this format.

A restore also checks what the key cannot: files set-up changed or deleted must hold the
content they held when it was stored, and no path set-up created may exist yet. Otherwise
set-up runs and its entry is replaced.

Paths baked in: a virtualenv names its own absolute path (``bin/`` scripts' shebangs,
``pyvenv.cfg``, ``activate``), an editable install the source's. Every attempt folder has
another path, so a tree copied as it is would run the old attempt's Python, or none. When
it is stored, the files that name the attempt folder (or the run folder) are listed; a
restore writes those afresh with the new paths (text files only: a binary file, such as a
``.pyc`` whose source path only shows in tracebacks, keeps the old one, since its strings
are length-prefixed). Links are rewritten alike.

How files come back (`entries.restore`): a file that needs no rewrite is cloned (reflink:
btrfs, XFS, APFS share the blocks until one side writes, and a write makes the writer's own
copy), else copied (the kernel's copy_file_range), so nothing done in an attempt reaches
the entry. Files are never hard-linked: an attempt and the cache would share each one, and
a write in place (the agent's editor, as root even into a read-only file) would change the
entry and every attempt restored from it, keeping its size and mtime if it liked.

The manifest holds each file's sha256, and a restore first checks the entry's files
against it (`intact`; a read of the entry, which a restore reads anyway): an entry that
differs (edited, truncated, a CI cache step's broken copy) is deleted and set-up runs.
Only the attempt folder is cached: what set-up leaves in its HOME or a `sandbox.write`
folder is not restored, and a set-up that writes into the attempt's ``.git`` is not kept.

`key` computes the key; `entries` stores, checks, restores, lists and prunes entries;
`pytest_atom.run.setup_commands` runs set-up through them, `atom cache` lists and prunes.
Where to add: a new input of set-up's result goes into `key.setup_key` (and `FORMAT` goes
up by one, so older entries miss); a new check before a restore into `entries.stale`.
"""
