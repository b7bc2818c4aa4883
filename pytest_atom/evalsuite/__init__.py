"""`claude plugin eval` suites under pytest: each case becomes a spec, run like any other.

`case_schema` is the case schema of the CLI we pin; `suites` loads a suite's cases; `specs` turns
a case into specs (its with/without arms). The grader kinds with no spec check are check
kinds in `pytest_atom.checks`.
"""
