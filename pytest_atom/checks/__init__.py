"""checks: deterministic acceptance checks, the ``accept:`` entries of a spec.

What lives here:

- ``kinds/``: the built-in check kinds, one module each (``file_exists.py``,
  ``command.py``, ``tool_used.py``…), found through the ``pytest_atom.check_kinds``
  entry-point group; ``kinds/__init__.py`` loads the group into `KINDS`.
- ``kind.py``: the `CheckKind` protocol those modules implement, `BuiltinKind` (the defaults
  they share), the `Entry` a kind builds from and the `Scene` it runs on; ``params.py``: a
  kind's parameters declared once, as a dataclass.
- shared support, used by kinds and never a kind itself: ``evidence.py`` (reading the
  workspace safely, file heads, command tails, listings), ``shell.py`` (running a command
  confined, as `command` and plugins' checks do), ``trajectory.py`` (the agent's calls).
- ``registry.py``: `CheckRegistry` (a check raises `pytest_atom.errors.CheckError`);
  ``builtin.py``: `register_checks` (the same call a plugin's ``pytest_atom_register_checks``
  makes), `default_registry`, `run_checks`.
- ``schema.py``: the spec schema with the kinds' fragments; it writes ``spec_schema.json``.

The spec's values (`Spec`, `Check`) sit below the checks; the loader hosts the kinds as a
plugin host does its plugins: `pytest_atom.spec_loader` imports this package (never the other
way round) and builds each ``accept:`` entry through its kind (`CheckKind.build`), validated
against the schema made of the kinds' fragments. A plugin's kind is known to the loader by
name only: its value becomes its params as is. No check kind imports another.

Add a check kind (docs/where-to-add.md): its module in ``kinds/`` ending ``KIND =
<Name>()``, its line in the ``pytest_atom.check_kinds`` group of ``pyproject.toml`` (then
reinstall), ``python -m pytest_atom.checks.schema`` to write its fragment, and
``tests/checks/test_<name>.py``. Nothing else names a kind. A kind that is only a function
is registered from a ``pytest_atom_register_checks`` hook (`CheckRegistry.register`, or
`register_trajectory`).
"""
