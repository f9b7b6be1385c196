"""``python reference.py FD`` (cwd: the exercise's source folder): the expected results — the
exercise's checks run with torch and the reference solutions, by the grader, never with learner
code and never in the sandbox. Same cells and messages as ``inside/harness.py``."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(1, os.getcwd())  # the exercise's staged minigrad, which its setup cell imports
    import torch

    from inside.harness import serve  # beside this file (its folder is first on the path)

    serve(torch, int(sys.argv[1]))
