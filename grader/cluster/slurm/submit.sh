#!/usr/bin/env bash
# Grade EXERCISE on a Slurm cluster in SHARDS array tasks, into one gradebook:
#
#   MINIGRAD_GRADEBOOK_URL=postgresql://... grader/cluster/slurm/submit.sh EXERCISE SHARDS
#
# Run it from the course's folder, on storage every node sees (it holds the submissions, the staged
# packages, the expected results' cache and the logs, .course/logs/slurm-*.out). Three jobs: prepare
# (once: staging, the gradebook's tables, torch's expected results, on a node like the shards'), the
# array of shards (task I grades the submissions at positions I, I + N, ...: `autograde --shard
# I/N`), and gather, which resubmits the shards that left submissions without a final outcome (a
# node lost, a task killed) up to MINIGRAD_ATTEMPTS times (default 3), then exports the grades.
# Prints the three job ids. sbatch's options go in its SBATCH_* variables (SBATCH_PARTITION=gpu,
# SBATCH_ACCOUNT=...), so that gather's resubmissions keep them, and a shard's CPUs and memory in
# MINIGRAD_SHARD_CPUS and MINIGRAD_SHARD_MEM (default: grade.sbatch's, 2 and 8G); MINIGRAD_PYTHON:
# the Python with the course's packages (default: the course's .venv).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 EXERCISE SHARDS" >&2; exit 2; }
export EXERCISE="$1" SHARDS="$2" MINIGRAD_COURSE="$PWD" MINIGRAD_ATTEMPTS="${MINIGRAD_ATTEMPTS:-3}"
export MINIGRAD_PYTHON="${MINIGRAD_PYTHON:-$PWD/.venv/bin/python}"
[ -n "${MINIGRAD_GRADEBOOK_URL:-}" ] || echo "$0: MINIGRAD_GRADEBOOK_URL is not set: the shards share the course's SQLite gradebook" >&2
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p .course/logs
prepare=$(sbatch --parsable --export=ALL --job-name=minigrad-prepare --output=.course/logs/slurm-%j.out \
  --wrap "exec \"$MINIGRAD_PYTHON\" -m grader prepare \"$EXERCISE\"")
shards=$(sbatch --parsable --export=ALL --dependency="afterok:$prepare" --array="0-$((SHARDS - 1))" \
  ${MINIGRAD_SHARD_CPUS:+--cpus-per-task="$MINIGRAD_SHARD_CPUS"} ${MINIGRAD_SHARD_MEM:+--mem="$MINIGRAD_SHARD_MEM"} \
  "$here/grade.sbatch")
gather=$(sbatch --parsable --export=ALL,MINIGRAD_ATTEMPT=1 --dependency="afterany:$shards" "$here/gather.sbatch")
echo "prepare $prepare, shards $shards, gather $gather"
