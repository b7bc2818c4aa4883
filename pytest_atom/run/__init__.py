"""Running one spec: its model source, its attempts (or steps) and its result.

`spec_run.run_spec` is the entry every front end takes, through `harness.Harness.run`
(what a session shares: settings, hooks, the check registry). `execution` is the attempt
loop: the workspace (`workspace`, minus pytest-atom's own files), set-up
(`setup_commands`), the executor (`pytest_atom.loop`), checks, reflector, decision; `steps`
and `planner` run multi-step specs; `simulated_user` is a spec's `user:`, who answers each
agent turn and its questions; `factory` builds a run's agents; `tools` runs a project's
tools; `interrupted` says where a Ctrl-C left a run; `oracle` is `atom validate`'s runs (a
spec's `oracle:` as an attempt's agent, its `script:` offline). The run's folder is
`pytest_atom.run_folders`'s, set-up's cache `pytest_atom.setup_cache`'s.
"""
