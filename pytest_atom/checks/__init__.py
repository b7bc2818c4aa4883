"""checks: deterministic acceptance checks, the ``accept:`` entries of a spec.

What lives here:

- ``kinds/``: the built-in check kinds, one module each (``file_exists.py``,
  ``command.py``, ``tool_used.py``…). A kind module holds the kind whole: the JSON schema of
  its value, with an object form's parameters declared once (a ``Params`` dataclass, whose
  fields give the schema fragment, the defaults and the types: ``params.py``), how it
  builds them from the spec (errors at their line), how it describes itself (the label
  reports show) and how it runs.
  They are found through the ``pytest_atom.check_kinds`` entry-point group (pyproject.toml
  declares them, one line each); ``kinds/__init__.py`` loads the group into `KINDS`.
- ``kind.py``: the `CheckKind` protocol those modules implement, the `Entry` a kind builds
  from and the `Scene` it runs on. ``params.py``: `param` and `object_schema`, a kind's
  parameters declared once as a dataclass.
- shared support, used by kinds and never a kind itself: ``evidence.py`` (reading the
  workspace safely, file heads, command tails, listings), ``shell.py`` (running a command
  confined, as `command` and plugins' checks do), ``trajectory.py`` (the agent's calls, as
  the trajectory kinds read them).
- ``registry.py``: `CheckRegistry` (a check raises `pytest_atom.errors.CheckError`). ``builtin.py``: `register_checks` (the
  built-in kinds' registration: the same registry and the same call a plugin's
  ``pytest_atom_register_checks`` makes), `default_registry`, `run_checks`.
- ``schema.py``: the spec schema with the kinds' fragments; it writes ``spec_schema.json``.

How the spec and the checks meet. Everything reads a spec, so the spec's values (`Spec`,
`Check`) and its schema sit low in the layers, below the checks. The loader is the host of
the check kinds, as a plugin host is of its plugins: `pytest_atom.spec_loader` imports this
package (never the other way round) and builds each ``accept:``
entry through its kind (`CheckKind.build`), validating it against the schema made of the
kinds' fragments; the `Check` it makes keeps its kind's label (`Check.label`). A kind
registered by a plugin is known to the loader by name only: its value becomes its params
as is. No check kind imports another (the ``independence`` contract).

Add a check kind:

1. write ``pytest_atom/checks/kinds/<name>.py`` with its schema, ``Params``, ``build``,
   ``describe``, ``run`` and ``KIND = <Name>()``, its class a `kind.BuiltinKind` (whose
   defaults it overrides where it differs: ``reads_run``, ``needs_tool``, ``confined``);
   copy the nearest kind;
2. add ``<name> = "pytest_atom.checks.kinds.<name>:KIND"`` to the
   ``pytest_atom.check_kinds`` entry-point group in ``pyproject.toml`` (and reinstall);
3. run ``python -m pytest_atom.checks.schema``, which writes its fragment into
   ``spec_schema.json`` (a test fails until it is written);
4. test it in ``tests/checks/test_<name>.py``.

Nothing else names a kind: not the loader, not `Check`, not the registry, not the reports.
Another distribution adds a whole kind (schema, build, label) the same way: one module and
one line in its own ``pytest_atom.check_kinds`` group. A kind that is only a function is
registered from a ``pytest_atom_register_checks`` hook with `CheckRegistry.register` (or
`register_trajectory`).
"""
