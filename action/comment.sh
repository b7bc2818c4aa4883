#!/usr/bin/env bash
# The action's comment step: this run compared with the base branch's run that the restored
# history store holds (`atom diff --markdown`), posted on the pull request.
#   ATOM_OUT      where the comment's body is written (comment.md)
#   ATOM_HISTORY  the history store the run step recorded into
#   ATOM_PR       the pull request's number; empty: the body is written and not posted
#   GH_TOKEN      the token `gh pr comment` posts with (GH_REPO: the repository)
set -euo pipefail

out="${ATOM_OUT:?ATOM_OUT names the run step folder}"
history="${ATOM_HISTORY:-.atom/history.db}"
[[ "$history" == *://* || "$history" == none || "$history" == /* ]] || history="$PWD/$history"
body="$out/comment.md"
status=0
atom diff --markdown --history "$history" >"$body" 2>"$out/comment.err" || status=$?
if [[ "$status" == 1 ]]; then
    # atom diff's own error (the store holds no earlier run to compare with, as on a branch's
    # first run): said on the job's page, nothing posted, the job not failed for it.
    echo "::notice title=pytest-atom::no comparison to post: $(tr '\n' ' ' <"$out/comment.err")"
    exit 0
elif [[ "$status" != 0 ]]; then
    cat "$out/comment.err" >&2
    exit "$status"
fi
if [[ -z "${ATOM_PR:-}" ]]; then
    echo "not a pull request: the comparison is in $body, not posted"
    exit 0
fi
gh pr comment "$ATOM_PR" --body-file "$body"
