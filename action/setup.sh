#!/usr/bin/env bash
# The action's set-up step: the pinned Claude Code CLI and sandbox runtime into the per-user
# cache (~/.cache/pytest-atom), unless the restored cache already holds them.
set -euo pipefail
atom setup
