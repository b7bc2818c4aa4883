"""How many of the caller's variables reach the agent's shell: run by hand, before/after.

    PYTHONPATH=<checkout> python benchmarks/env_count.py [--extra 200]

Makes a throwaway project with one scripted spec whose agent runs ``env | sort`` through
Claude Code's Bash tool, runs ``pytest --atom`` on it with this process's environment plus
`--extra` made-up variables (a big CI environment), and counts the caller's variables in
what the agent saw: by name, and with the caller's own value.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC = """\
name: env
prompt: Write out your environment.
script: script.yaml
max_iterations: 1
accept:
  - file_exists: agent-env.txt
"""
SCRIPT = """\
turns:
  - tool_use:
      - name: Bash
        input: {command: "env | sort > agent-env.txt", description: env}
  - text: done EXIT_LOOP_NOW
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extra", type=int, default=200)
    args = parser.parse_args()
    caller = dict(os.environ)
    caller.update({f"CI_MADE_UP_{i:03d}": f"value-{i}" for i in range(args.extra)})
    caller.update(GITHUB_TOKEN="ghp_" + "x" * 36, AWS_SECRET_ACCESS_KEY="made/up/secret")
    with tempfile.TemporaryDirectory(prefix="env-count-") as tmp:
        project = Path(tmp)
        (project / "env.atom.yaml").write_text(SPEC)
        (project / "script.yaml").write_text(SCRIPT)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--atom", "-p", "no:cacheprovider", "env.atom.yaml"],
            cwd=project,
            env=caller,
            capture_output=True,
            text=True,
            check=False,
        )
        found = sorted(project.glob(".atom/runs/*/attempts/a01/agent-env.txt"))
        if not found:
            sys.exit(done.stdout[-3000:] + done.stderr[-3000:])
        seen = dict(line.split("=", 1) for line in found[0].read_text().splitlines() if "=" in line)
    by_name = [k for k in caller if k in seen]
    same = [k for k in by_name if seen[k] == caller[k]]
    print(f"caller variables: {len(caller)}; the agent's shell had {len(seen)} variables")
    print(f"caller names reaching the agent: {len(by_name)}; with the caller's value: {len(same)}")
    print("with the caller's value:", " ".join(sorted(same)))


if __name__ == "__main__":
    main()
