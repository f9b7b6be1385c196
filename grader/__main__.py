"""The course's command line (run from the repository root):

  python -m grader build [--check]          derive solutions/ and exercises/ from minigrad/
  python -m grader stage                    stage each exercise's minigrad (build outputs, not committed)
  python -m grader register                 record in the gradebook each exercise it does not know yet
                                            (collect and ./run lab --instructor do it; autograde, for its exercise)
  python -m grader release EXERCISE         put the release into the exchange (learners fetch it),
                                            unless it is there as it is now
  python -m grader release all              release every exercise not released as it is now
  python -m grader collect EXERCISE         take learners' submissions from the exchange
  python -m grader autograde EXERCISE [--workers N] [--shard I/N]
                                            grade what has no final outcome yet; a shard, the submissions
                                            at positions I, I + N, ... (exit status 1 while any of them
                                            lacks one: rerun it)
  python -m grader prepare EXERCISE         once before shards start: stage, the gradebook's tables,
                                            torch's expected results
  python -m grader unfinished EXERCISE N    which of N shards have submissions without a final outcome
                                            ("1,3"; exit status 1 if any)
  python -m grader status EXERCISE          graded (score), not graded (reason) or not graded yet, per submission
  python -m grader export EXERCISE          grades CSV with reasons + a score histogram (PNG)
  python -m grader feedback EXERCISE        feedback HTML, hidden tests reduced to passed/failed
  python -m grader report EXERCISE          what the class got wrong: per scenario, learners failing it, the
                                            most common first differences, its lesson section and forum
                                            question; a CSV, a figure (PNG) and a notebook with both
  python -m grader selftest [EXERCISE ...]  grade each exercise's reference (full marks), untouched release
                                            (0) and kept wrong versions (below full) on this machine, as
                                            learners' submissions are: run it once per grading machine
"""
import argparse
import os
import sys

from . import build

EXERCISE_COMMANDS = ("release", "collect", "prepare", "autograde", "status", "export", "feedback", "report")


def shard_count(text):
    """N, the number of shards: at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of shards (1 or more)")
    return int(text)


def shard(text):
    """``I/N``: the I-th of N shards, counted from 0 (a Slurm array's task id, a Kubernetes Job's
    completion index)."""
    index, _, count = text.partition("/")
    try:
        index, count = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (say 0/4 for the first of 4 shards)") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"shard {text}: I must be from 0 to N - 1")
    return index, count


def main(argv=None):
    os.environ.update(build.nbgrader_env(build.ROOT))
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="derive solutions/ and exercises/ from minigrad/ and the specs")
    build_parser.add_argument("--check", action="store_true", help="fail if a committed derived file is stale")
    commands.add_parser("stage", help="stage each exercise's minigrad into solutions/ and exercises/")
    commands.add_parser("register", help="record in the gradebook every exercise it does not know yet")
    unfinished = commands.add_parser("unfinished", help="which shards have submissions without a final outcome")
    unfinished.add_argument("exercise")
    unfinished.add_argument("shards", type=shard_count)
    selftest = commands.add_parser("selftest", help="prove this machine grades right (exit status 1 if not)")
    selftest.add_argument("exercises", nargs="*", help="default: every exercise")
    selftest.add_argument("--workers", type=int, default=None, help="default: the CPUs this job was given")
    selftest.add_argument("--no-sandbox", action="store_true", help="as autograde's (when the sandbox cannot be set up)")
    for name in EXERCISE_COMMANDS:
        command = commands.add_parser(name)
        command.add_argument("exercise")
        if name in ("autograde", "prepare"):
            command.add_argument("--no-sandbox", action="store_true",
                                 help="run student code with the grader's rights (when the sandbox cannot be set up)")
        if name == "autograde":
            command.add_argument("--workers", type=int, default=None, help="default: the CPUs this job was given")
            command.add_argument("--shard", type=shard, default=None, metavar="I/N",
                                 help="grade the submissions at positions I, I + N, ... of their sorted names")
            command.add_argument("--force", action="store_true", help="grade every submission again, not only those without an outcome or whose grading failed")
        if name == "export":
            command.add_argument("--csv", default=None, help="default: .course/<exercise>-grades.csv")
            command.add_argument("--histogram", default=None, help="default: .course/<exercise>-scores.png")
        if name == "report":
            for output, suffix in (("csv", "csv"), ("figure", "png"), ("notebook", "ipynb")):
                command.add_argument(f"--{output}", default=None, help=f"default: .course/<exercise>-report.{suffix}")
    args = parser.parse_args(argv)

    if args.command == "build":
        return _build(args.check)
    if args.command == "stage":
        if build.stage(build.ROOT):
            print("minigrad: staged each exercise's minigrad (its parts stubbed) beside its notebook", file=sys.stderr)
        return 0
    from . import workflow

    if args.command == "selftest":
        from . import selftest
        from .sandbox import SandboxUnavailable

        try:
            return 1 if selftest.run(args.exercises, args.workers, not args.no_sandbox) else 0
        except (SandboxUnavailable, ValueError) as refusal:
            print(refusal, file=sys.stderr)
            return 2
    if args.command == "unfinished":
        shards = workflow.unfinished_shards(args.exercise, args.shards)
        print(",".join(map(str, shards)))
        return 1 if shards else 0
    if args.command == "register":
        recorded = workflow.register()
        print(f"recorded in the gradebook: {', '.join(recorded)}" if recorded else "the gradebook knows every exercise")
    elif args.command == "release" and args.exercise == "all":
        workflow.release_all()
    elif args.command == "release":
        workflow.release(args.exercise)
    elif args.command in ("collect", "feedback"):
        print(getattr(workflow, args.command)(args.exercise))
    elif args.command in ("prepare", "autograde"):
        from .sandbox import SandboxUnavailable

        try:
            if args.command == "prepare":
                print(workflow.prepare(args.exercise, sandbox=not args.no_sandbox))
                return 0
            unfinished = workflow.autograde(args.exercise, workers=args.workers, sandbox=not args.no_sandbox,
                                            force=args.force, shard=args.shard)
        except (SandboxUnavailable, workflow.NotPrepared) as refusal:
            print(refusal, file=sys.stderr)
            return 2
        if args.shard is None:
            print(*workflow.status(args.exercise), sep="\n")
            return 0
        print(f"shard {args.shard[0]}/{args.shard[1]} of {args.exercise}: "
              + (f"{len(unfinished)} without a final outcome (rerun this shard): {', '.join(unfinished)}"
                 if unfinished else "every submission has its outcome"))
        return 1 if unfinished else 0
    elif args.command == "status":
        print(*workflow.status(args.exercise), sep="\n")
    elif args.command == "report":
        from . import report

        state = build.ROOT / ".course"
        paths = [getattr(args, output) or state / f"{args.exercise}-report.{suffix}"
                 for output, suffix in (("csv", "csv"), ("figure", "png"), ("notebook", "ipynb"))]
        said = report.report(args.exercise, *paths)
        print(*said, sep="\n")
        if len(said) > 1:
            print(f"wrote {paths[0]}, {paths[1]} and {paths[2]} (in the instructor's lab: File → Open from Path…)")
    else:
        state = build.ROOT / ".course"
        csv_path = args.csv or state / f"{args.exercise}-grades.csv"
        histogram = args.histogram or state / f"{args.exercise}-scores.png"
        workflow.export(args.exercise, csv_path, histogram)
        print(f"wrote {csv_path} and {histogram}")
    return 0


def _build(check):
    if check:
        stale = build.check()
        if stale:
            print("stale derived files (run `python -m grader build`):", *stale, sep="\n  ")
            return 1
        print("derived files are up to date")
        return 0
    build.build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
