"""Running one spec: the harness, attempts, steps, the planner, the atom loop, run folders."""
