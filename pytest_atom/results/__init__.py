"""Results: what a spec run produced, typed until a report renders it.

`spec_result` holds a run's `SpecResult`, its attempts, steps and plan, and the stored
outcome that stands in for a cached run; `outcome` decides the outcome once; `check_result`
and `verdict` are what the checks and the reflector found; `record` is what an agent's
sessions did; `drift` what a replay tolerated or could not answer; `harness_events` the
harness's progress; `rows` a run as the summary, results files and baselines see it;
`thresholds` how many of a spec's repeats must pass.

Where to add: a result field goes on the value that owns it here; reports read it.
"""
