"""suite: a run of many specs, from collection to its exit status.

- `suite_run.SuiteRun`: the stages collect → arms → run → summary → gates → exit status.
  `pytest --atom` (`pytest_atom.pytest.session`) calls into it from pytest's hooks, and
  `atom run` launches that same pytest session; nothing else decides a gate or an exit status.
  Its `Summary` holds the summary's lines, which pytest and `atom run` lay out.
- `ending`: the one decision of a suite's exit status (`decide`) and its order of gates.
- `shards`: a CI matrix's shards, each a results file, combined into one run.

Where to add: a new gate is a field of `ending.Ending` and a step of `decide`, filled in
`SuiteRun.exit_status`; a new line under the summary table is a field of `Summary`, filled
in `SuiteRun.summary` and placed by `pytest_atom.pytest.session` and `atom_cli.progress`.
"""
