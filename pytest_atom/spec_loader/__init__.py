"""The spec loader: a ``*.atom.yaml`` file read, validated and built into `spec`'s values.

`load` is the one entry point (`load_spec`, `load_specs`, `parse_specs`): it reads the
document, expands its cases (`pytest_atom.datasets`) and arms, and validates each spec against
the schema; `build` turns schema-valid data into a `Spec`, building each ``accept:`` entry
through its check kind (`pytest_atom.checks.kinds`), as a plugin host loads its plugins.

The loader is apart from the spec's values so that what only reads a spec (results, agents,
replay, the checks themselves) never depends on the check kinds or the datasets.

Where to add: a spec key is a property in `pytest_atom/spec/spec_schema.json`, a field in
`pytest_atom.spec.types`, and its building in `build`.
"""
