"""What a spec is: a ``*.atom.yaml`` file's typed values, schema and the rules it cannot state.

`types` holds the values (`Spec`, `Check`, ...); `document` reads the YAML keeping every
node's line; `validation` turns schema errors into messages at the node; `confinement`,
`claude` and `env` check what a schema cannot; `arms` and `workspaces` are the spec's
variants and the folders no run collects. Loading a file into these values is
`pytest_atom.spec_loader`'s.

Where to add: a spec key is a property in `spec_schema.json`, a field in `types`, and its
building in `pytest_atom.spec_loader.build` (a check kind's parameters live with the kind, in
`pytest_atom.checks`).
"""
