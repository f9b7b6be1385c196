#!/usr/bin/env bash
# Build the grader's image (default name minigrad-grader) with Docker, needing no registry:
#
#   grader/cluster/container/build.sh [IMAGE]
#
# The base is a Debian minbase that debootstrap makes from Debian's mirror (python3, bubblewrap,
# util-linux), imported as minigrad-base:bookworm, unless MINIGRAD_IMAGE_BASE names one (e.g.
# debian:bookworm-slim from a registry). The Python packages are the course's (pyproject.toml's
# dependencies and its course extra) with TORCH_SPEC's torch (default torch==2.13.0), downloaded by
# this machine's pip (its index and wheels) for the image's Python 3.11. Run it as root (debootstrap, docker).
set -euo pipefail
image="${1:-minigrad-grader}"
here="$(cd "$(dirname "$0")" && pwd)"
course="$(cd "$here/../../.." && pwd)"
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
base="${MINIGRAD_IMAGE_BASE:-minigrad-base:bookworm}"
if [ -z "${MINIGRAD_IMAGE_BASE:-}" ] && ! docker image inspect "$base" > /dev/null 2>&1; then
  echo "build.sh: making $base with debootstrap (a minute)" >&2
  debootstrap --variant=minbase --include=python3,python3-venv,bubblewrap,util-linux bookworm "$context/rootfs" > /dev/null
  tar -C "$context/rootfs" -c . | docker import - "$base" > /dev/null
  rm -rf "$context/rootfs"
fi
mkdir "$context/wheels"
python3 - "$course/pyproject.toml" "${TORCH_SPEC:-torch==2.13.0}" > "$context/wheels/requirements.txt" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project["optional-dependencies"]
print(sys.argv[2], *project["dependencies"], *extras["viz"],
      *(r for r in extras["course"] if not r.startswith("minigrad")), sep="\n")
PY
python3 -m venv "$context/pip"  # a pip of its own: the system's Python may have none
"$context/pip/bin/pip" download -qq -d "$context/wheels" --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
  -r "$context/wheels/requirements.txt"
cp "$here/Dockerfile" "$context/"
docker build -q --build-arg BASE="$base" -t "$image" "$context"
