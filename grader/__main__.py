"""The course's command line (run from the repository root):

  python -m grader build [--check]          derive solutions/ and exercises/ from minigrad/
  python -m grader stage                    stage each exercise's minigrad (build outputs, not committed)
  python -m grader register                 record in the gradebook each exercise it does not know yet
                                            (collect, autograde and ./run lab --instructor do it)
  python -m grader release EXERCISE         put the release into the exchange (learners fetch it),
                                            unless it is there as it is now
  python -m grader release all              release every exercise not released as it is now
  python -m grader collect EXERCISE         take learners' submissions from the exchange
  python -m grader autograde EXERCISE [--workers N]
  python -m grader status EXERCISE          graded (score), not graded (reason) or not graded yet, per submission
  python -m grader export EXERCISE          grades CSV with reasons + a score histogram (PNG)
  python -m grader feedback EXERCISE        feedback HTML, hidden tests reduced to passed/failed
  python -m grader selftest [EXERCISE ...]  grade each exercise's reference (full marks), untouched release
                                            (0) and kept wrong versions (below full) on this machine, as
                                            learners' submissions are: run it once per grading machine
"""
import argparse
import os
import sys

from . import build

EXERCISE_COMMANDS = ("release", "collect", "autograde", "status", "export", "feedback")


def main(argv=None):
    os.environ.update(build.nbgrader_env(build.ROOT))
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="derive solutions/ and exercises/ from minigrad/ and the specs")
    build_parser.add_argument("--check", action="store_true", help="fail if a committed derived file is stale")
    commands.add_parser("stage", help="stage each exercise's minigrad into solutions/ and exercises/")
    commands.add_parser("register", help="record in the gradebook every exercise it does not know yet")
    selftest = commands.add_parser("selftest", help="prove this machine grades right (exit status 1 if not)")
    selftest.add_argument("exercises", nargs="*", help="default: every exercise")
    selftest.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    selftest.add_argument("--no-sandbox", action="store_true", help="as autograde's (when the sandbox cannot be set up)")
    for name in EXERCISE_COMMANDS:
        command = commands.add_parser(name)
        command.add_argument("exercise")
        if name == "autograde":
            command.add_argument("--workers", type=int, default=os.cpu_count() or 1)
            command.add_argument("--force", action="store_true", help="grade every submission again, not only those without an outcome or whose grading failed")
            command.add_argument("--no-sandbox", action="store_true",
                                 help="run student code with the grader's rights (when the sandbox cannot be set up)")
        if name == "export":
            command.add_argument("--csv", default=None, help="default: .course/<exercise>-grades.csv")
            command.add_argument("--histogram", default=None, help="default: .course/<exercise>-scores.png")
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
    if args.command == "register":
        recorded = workflow.register()
        print(f"recorded in the gradebook: {', '.join(recorded)}" if recorded else "the gradebook knows every exercise")
    elif args.command == "release" and args.exercise == "all":
        workflow.release_all()
    elif args.command == "release":
        workflow.release(args.exercise)
    elif args.command in ("collect", "feedback"):
        print(getattr(workflow, args.command)(args.exercise))
    elif args.command == "autograde":
        from .sandbox import SandboxUnavailable

        try:
            workflow.autograde(args.exercise, workers=args.workers, sandbox=not args.no_sandbox, force=args.force)
        except SandboxUnavailable as refusal:
            print(refusal, file=sys.stderr)
            return 2
        print(*workflow.status(args.exercise), sep="\n")
    elif args.command == "status":
        print(*workflow.status(args.exercise), sep="\n")
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
