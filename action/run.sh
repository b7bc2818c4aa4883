#!/usr/bin/env bash
# The action's run step: `pytest --atom` on the specs, its reports into one folder.
#   ATOM_SPECS        spec files or folders, split as a shell splits words
#   ATOM_OUT          the folder that receives the HTML report, the JSON traces, the run
#                     folders and the Markdown summary (the artifact the action uploads)
#   ATOM_HISTORY      the history store: a path (relative ones under this folder, where the
#                     action's cache step restores it) or a URL
#   ATOM_PYTEST_ARGS  more pytest arguments, split as a shell splits words
# Exits with pytest's status.
set -euo pipefail

words() { python -c 'import shlex, sys; print("\0".join(shlex.split(sys.argv[1])), end="")' "$1"; }
mapfile -d '' -t specs < <(words "${ATOM_SPECS:?ATOM_SPECS names the specs to run}")
mapfile -d '' -t extra < <(words "${ATOM_PYTEST_ARGS:-}")
out="${ATOM_OUT:?ATOM_OUT names the folder for the reports}"
history="${ATOM_HISTORY:-.atom/history.db}"
[[ "$history" == *://* || "$history" == none || "$history" == /* ]] || history="$PWD/$history"
mkdir -p "$out"
# The summary step appends summary.md to the job's page, with the artifact's link: pytest
# writes it there alone, not a second time to $GITHUB_STEP_SUMMARY.
unset GITHUB_STEP_SUMMARY

exec python -m pytest --atom "${specs[@]}" \
    --atom-history "$history" \
    --atom-runs-dir "$out/runs" \
    --atom-html "$out/report.html" \
    --atom-report "$out/traces" \
    --atom-markdown "$out/summary.md" \
    "${extra[@]}"
