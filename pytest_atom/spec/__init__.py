"""What a spec is: a ``*.atom.yaml`` file loaded, validated and typed.

`load` is the one entry point (`load_spec`, `load_specs`, `parse_specs`); `document` reads the
YAML keeping every node's line; `validation` turns schema errors into messages at the node;
`build` turns schema-valid data into the typed values of `types`; `paths`, `claude` and `env`
check what a schema cannot (paths stay inside the project, the ``claude:`` files exist,
``env:`` expands); `arms` and `workspaces` are the spec's variants and the folders no run
collects. The JSON schema is `spec_schema.json`.

The loader (`load`, `build`) sits above `pytest_atom.checks` in the layers and the rest below
it: the loader hosts the check kinds as a plugin host does its plugins, and everything reads a
spec's values.

Where to add: a spec key is a property in `spec_schema.json`, a field in `types`, and its
building in `build` (a check kind's parameters live with the kind, in `pytest_atom.checks`).
"""
