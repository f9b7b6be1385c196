#!/usr/bin/env bash
# hub/start.sh [jupyterhub args]: start the class's JupyterHub (after hub/setup.sh), as root, in the
# foreground; Ctrl-C stops it and every user's server. HUB_PORT (8000) and the other settings:
# hub/jupyterhub_config.py.
set -euo pipefail
config="$(cd "$(dirname "$0")" && pwd)/jupyterhub_config.py"
HUB_PREFIX="${HUB_PREFIX:-/opt/minigrad-hub}"
export HUB_PREFIX PATH="$HUB_PREFIX/venv/bin:$PATH"
[ -x "$HUB_PREFIX/venv/bin/jupyterhub" ] || { echo "hub/start.sh: run hub/setup.sh first" >&2; exit 1; }
state="${HUB_STATE:-$HUB_PREFIX/state}"
mkdir -p "$state" && chmod 700 "$state" && cd "$state"
exec jupyterhub -f "$config" "$@"
