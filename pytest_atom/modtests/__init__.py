"""A mod's own tests: its ``*.test.ts`` and ``*.test.tsx`` files, run by the pinned CLI's
``claude plugin test`` (docs/how-to/plugin-test.md).

`plugin_test` runs one test file, confined, in a run folder of its own, and reads each test's
result, failure and duration from what the CLI prints. The pytest items that collect the
files are `pytest_atom.pytest.mod_tests`. Where to add: a new fact read from the CLI's
output, in `plugin_test`.
"""
