#!/usr/bin/env bash
# The action's install step: pytest-atom and what Claude Code's sandbox needs on Linux.
# Prints the pinned Claude Code version, its cache's key, into $GITHUB_OUTPUT (on stdout
# without it).
#   ATOM_PACKAGE  what pip installs: a version (0.2.0), a requirement, a path, a wheel or a
#                 git URL; empty: the action's own checkout ($ATOM_ACTION_PATH).
set -euo pipefail

package="${ATOM_PACKAGE:-}"
if [[ -z "$package" ]]; then
    package="${ATOM_ACTION_PATH:?ATOM_PACKAGE or ATOM_ACTION_PATH names what to install}"
elif [[ "$package" =~ ^[0-9] ]]; then
    package="pytest-atom==$package"
fi
python -m pip install --quiet --disable-pip-version-check "$package"

# bubblewrap and socat confine the agent and set-up on Linux (docs/install.md).
if [[ "$(uname -s)" == Linux ]] && ! { command -v bwrap && command -v socat; } >/dev/null; then
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bubblewrap socat >/dev/null
fi
# Ubuntu 23.10 and later forbid unprivileged user namespaces unless an AppArmor profile
# allows them, and bwrap needs one: this profile allows it for /usr/bin/bwrap alone.
restrict=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
if [[ -r "$restrict" && "$(cat "$restrict")" == 1 && -x /usr/bin/bwrap ]]; then
    printf 'abi <abi/4.0>,\ninclude <tunables/global>\nprofile bwrap /usr/bin/bwrap flags=(unconfined) {\n  userns,\n}\n' \
        | sudo tee /etc/apparmor.d/bwrap >/dev/null
    sudo apparmor_parser -r /etc/apparmor.d/bwrap
fi

python -c "from pytest_atom import CLAUDE_CODE_VERSION; print(f'claude-code={CLAUDE_CODE_VERSION}')" \
    >>"${GITHUB_OUTPUT:-/dev/stdout}"
