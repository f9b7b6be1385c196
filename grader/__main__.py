"""The course's command line: ``python -m grader build [--check]``."""
import argparse
import sys

from . import build


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="derive solutions/ and exercises/ from minigrad/ and the specs")
    build_parser.add_argument("--check", action="store_true", help="fail if a committed derived file is stale")
    args = parser.parse_args(argv)
    if args.check:
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
