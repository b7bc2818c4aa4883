"""Running one spec: its run folder, its model source, attempts, steps and the planner.

`spec_run.run_spec` is the entry every front end takes; `harness` holds what a session shares
(settings, hooks, the check registry); `execution` is the attempt loop (workspace, set-up,
agent, checks, reflector, decision); `steps` and `planner` run multi-step specs; `factory`
builds a run's agents; `workspace`, `own_files`, `setup_commands`, `setup_cache` and
`setup_key` prepare an attempt's folder; `retention` and `interrupted` look after run
folders; `runtime`, `retry` and `history` are the atom loop (seed 000/001) the attempt loop
drives; `tools` runs a project's tools; `validation` is `atom validate`'s runs (a spec's
`oracle:` as an attempt's agent, its `script:` offline).
"""
