"""The atom loop: one Claude Code conversation iterated until it prints its exit signal.

`runtime.AtomRuntime` writes USER_PROMPT.md, sends the prompt, retries what `retry`'s
`RetryManager` says is transient and keeps each iteration (`IterationHistory`). It is
`atom loop`, the seed-era Python API (`pytest_atom.legacy`), and the executor's loop
inside each attempt of a spec run (`pytest_atom.run.execution`).

Where to add: how an iteration ends goes in `runtime`; what is retried, and after how long,
in `retry`. What an attempt does around the loop (workspace, checks, judge) is `run`'s.
"""
