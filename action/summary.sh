#!/usr/bin/env bash
# The action's summary step: the run's Markdown summary, and a link to the uploaded report,
# appended to the job's page ($GITHUB_STEP_SUMMARY).
#   ATOM_OUT           the run step's folder (summary.md)
#   ATOM_ARTIFACT_URL  where the upload step put the report (empty: not uploaded)
set -euo pipefail

target="${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY names the job summary file}"
summary="${ATOM_OUT:?ATOM_OUT names the run step folder}/summary.md"
if [[ -s "$summary" ]]; then
    cat "$summary" >>"$target"
else
    echo "pytest-atom wrote no summary: the run stopped before its end (see the job's log)." >>"$target"
fi
if [[ -n "${ATOM_ARTIFACT_URL:-}" ]]; then
    printf '\n[HTML report, traces and run folders](%s)\n' "$ATOM_ARTIFACT_URL" >>"$target"
fi
