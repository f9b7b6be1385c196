"""Grading in shards against grading on one machine, on the same submissions of exercise 3, measured
in one run: ``python bench/shards.py [--submissions 40] [--shards N] [--runner R] [--gradebook URL]``.

Every run grades a course ``prepare`` made ready (its time is printed, not counted). N shards start
at once, ``autograde --shard I/N`` each, on one CPU each, as ``--runner`` runs them: ``processes``
(each pinned to a CPU, as a Slurm job's cpuset pins it), ``docker`` (the grader's image, ``--cpus
1``, no network, the sandbox's capabilities: what an indexed Job's pods run) or ``slurm``
(grader/cluster/slurm/submit.sh on the cluster SLURM_CONF names, one CPU a shard; its time includes
its prepare and gather jobs). The single machine is ``autograde --workers W`` (W: this machine's
CPUs) and ``--workers 1``.

Prints the wall times, each shard's submissions per minute, and its overhead: its time less what
its submissions took in the ``--workers 1`` run (that run's time per submission), i.e. what a shard
costs beyond the grading itself (starting Python and nbgrader, the gradebook, the sandboxed grading
server; for containers, the container). The gradebook is the course's SQLite file, or
``--gradebook``, a PostgreSQL URL (for ``docker``, a unix socket's folder in it is mounted into the
containers).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograde import EXERCISE, make_course  # noqa: E402 - bench/autograde.py, beside this script
from grader.build import nbgrader_env  # noqa: E402
from grader.sandbox import CONTAINER_FLAGS  # noqa: E402
from grader.workflow import available_cpus  # noqa: E402


def grader(where, env, *args):
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=where, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"python -m grader {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - start


def in_container(where, gradebook, *args):
    mounts = ["-v", f"{where}:/course"]
    if gradebook and "host=/" in gradebook:
        sockets = gradebook.split("host=")[1].split("&")[0]
        mounts += ["-v", f"{sockets}:{sockets}"]
    return ["docker", "run", "--rm", "--network", "none", "--cpus", "1", "--memory", "4g", *CONTAINER_FLAGS, *mounts,
            *(["-e", f"MINIGRAD_GRADEBOOK_URL={gradebook}"] if gradebook else []), "minigrad-grader",
            "python", "-m", "grader", *args]


def shards(where, env, count, runner, gradebook):
    """Run the shards; returns each one's time from the common start (None for slurm) and the total."""
    cores = sorted(os.sched_getaffinity(0))
    start = time.perf_counter()
    if runner == "slurm":
        env = {**env, "MINIGRAD_PYTHON": sys.executable, "MINIGRAD_SHARD_CPUS": "1", "MINIGRAD_SHARD_MEM": "4G"}
        subprocess.run([str(ROOT / "grader/cluster/slurm/submit.sh"), EXERCISE, str(count)], cwd=where, env=env,
                       check=True, capture_output=True)
        while subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout.strip():
            time.sleep(0.5)
        return None, time.perf_counter() - start
    commands = [in_container(where, gradebook, "autograde", EXERCISE, "--shard", f"{index}/{count}")
                if runner == "docker" else [sys.executable, "-m", "grader", "autograde", EXERCISE, "--shard",
                                             f"{index}/{count}"] for index in range(count)]
    processes = [subprocess.Popen(command, cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  preexec_fn=None if runner == "docker" else
                                  lambda core=cores[index % len(cores)]: os.sched_setaffinity(0, {core}))
                 for index, command in enumerate(commands)]
    ends = []
    for process in processes:
        if process.wait():
            raise SystemExit(f"a shard failed: {' '.join(process.args)}")
        ends.append(time.perf_counter() - start)
    return ends, max(ends)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--shards", type=int, default=available_cpus(), help="default: this machine's CPUs")
    parser.add_argument("--runner", choices=("processes", "docker", "slurm"), default="processes")
    parser.add_argument("--gradebook", help="a PostgreSQL URL the shards share (default: the course's SQLite file)")
    args = parser.parse_args()
    cpus = available_cpus()
    times = {}
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as scratch:
        for run in ("one machine", "one worker", "shards"):
            where = Path(scratch) / run.replace(" ", "-")
            where.mkdir()
            make_course(where, args.submissions)
            env = nbgrader_env(where)
            if run == "shards" and args.gradebook:
                env["MINIGRAD_GRADEBOOK_URL"] = args.gradebook
            if run != "shards" or args.runner != "slurm":  # every run grades what was prepared; slurm prepares in a job
                prepare = in_container(where, args.gradebook, "prepare", EXERCISE) if run == "shards" and \
                    args.runner == "docker" else [sys.executable, "-m", "grader", "prepare", EXERCISE]
                start = time.perf_counter()
                subprocess.run(prepare, cwd=where, env=env, check=True, capture_output=True)
                times[f"prepare ({run})"] = time.perf_counter() - start
            if run == "one machine":
                times[run] = grader(where, env, "autograde", EXERCISE, "--workers", str(cpus))
            elif run == "one worker":
                times[run] = grader(where, env, "autograde", EXERCISE, "--workers", "1")
            else:
                ends, times[run] = shards(where, env, args.shards, args.runner, args.gradebook)
    per_submission = times["one worker"] / args.submissions
    print(f"{args.submissions} submissions of {EXERCISE}, {cpus} CPUs, shards as {args.runner}, "
          f"gradebook: {'PostgreSQL' if args.gradebook else 'SQLite'}")
    print(f"one machine, autograde --workers {cpus}: {times['one machine']:6.1f} s")
    print(f"one machine, autograde --workers 1: {times['one worker']:6.1f} s ({per_submission:.2f} s a submission)")
    if "prepare (shards)" in times:
        print(f"prepare:                            {times['prepare (shards)']:6.1f} s (before each run: not counted)")
    print(f"{args.shards} shards at once, a CPU each:     {times['shards']:6.1f} s"
          + (" (prepare, shards and gather jobs)" if ends is None else ""))
    for index, end in enumerate(ends or []):
        count = len(range(index, args.submissions, args.shards))
        print(f"  shard {index}/{args.shards}: {count} submissions in {end:5.1f} s, {60 * count / end:5.1f} a minute, "
              f"overhead {end - count * per_submission:5.1f} s")


if __name__ == "__main__":
    main()
