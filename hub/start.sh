#!/usr/bin/env bash
# hub/start.sh [jupyterhub args]: start the class's JupyterHub (after hub/setup.sh), as root, in the
# foreground; Ctrl-C stops it and every user's server. HUB_PORT (8000) and the other settings:
# hub/jupyterhub_config.py. Beside it runs the machine's zygote (grader/lab/course_zygote.py), which
# forks the users' kernels and Validates from one import of torch; it holds nothing of root's
# environment, and ends with the hub.
set -euo pipefail
config="$(cd "$(dirname "$0")" && pwd)/jupyterhub_config.py"
HUB_PREFIX="${HUB_PREFIX:-/opt/minigrad-hub}"
export HUB_PREFIX PATH="$HUB_PREFIX/venv/bin:$PATH"
[ -x "$HUB_PREFIX/venv/bin/jupyterhub" ] || { echo "hub/start.sh: run hub/setup.sh first" >&2; exit 1; }
state="${HUB_STATE:-$HUB_PREFIX/state}"
mkdir -p "$state" "$HUB_PREFIX/run" && chmod 700 "$state" && chmod 755 "$HUB_PREFIX/run"
export HUB_ZYGOTE="$HUB_PREFIX/run/zygote-${HUB_PORT:-8000}.sock"
rm -f "$HUB_ZYGOTE"  # a socket left by a killed zygote answers no one
env -i PATH="$HUB_PREFIX/venv/bin:/usr/bin:/bin" HOME=/nonexistent LANG=C.UTF-8 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  "$HUB_PREFIX/venv/bin/python" "$HUB_PREFIX/etc/course_zygote.py" --serve "$HUB_ZYGOTE" >> "$state/zygote.log" 2>&1 &
zygote=$!
# A kernel asked for before the zygote serves (its imports take seconds) would start unshared: the hub
# opens once it serves, or without it if it died (the users' kernels then start on their own).
for _ in $(seq 1200); do
  [ -S "$HUB_ZYGOTE" ] && break
  kill -0 "$zygote" 2>/dev/null || { echo "hub/start.sh: the zygote ended: $state/zygote.log" >&2; break; }
  sleep 0.1
done
cd "$state"
exec jupyterhub -f "$config" "$@"
