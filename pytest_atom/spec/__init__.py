"""What a spec is: a ``*.atom.yaml`` file's typed values, its schema and the rules a schema
cannot state.

`types` holds the values (`Spec`, `Check`, ...); `document` reads the YAML keeping every node's
line; `validation` turns schema errors into messages at the node; `confinement`, `claude` and `env`
check what a schema cannot (paths stay inside the project, the ``claude:`` files exist,
``env:`` expands); `arms` and `workspaces` are the spec's variants and the folders no run
collects. The JSON schema is `spec_schema.json`. Loading a file into these values is
`pytest_atom.spec_loader`'s (it builds the checks through their kinds, which read these).

Where to add: a spec key is a property in `spec_schema.json`, a field in `types`, and its
building in `pytest_atom.spec_loader.build` (a check kind's parameters live with the kind, in
`pytest_atom.checks`).
"""
