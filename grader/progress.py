"""What a long command is doing, one exercise at a time, on stderr (stdout keeps its results).

On a terminal, tqdm's bar (count, elapsed time, an estimate of what is left, the exercise under way);
elsewhere (a log, CI, a test's pipe), a plain line as each exercise starts, which a bar's redrawing
would garble there.
"""
import sys

from tqdm import tqdm


def each_exercise(exercises, doing):
    """Yield each of ``exercises`` as it starts, saying so: "minigrad: ``doing``: EXERCISE (n/N)", or a bar."""
    exercises = list(exercises)
    if sys.stderr.isatty():
        with tqdm(total=len(exercises), desc=f"minigrad: {doing}", unit="exercise", file=sys.stderr) as bar:
            for exercise in exercises:
                bar.set_postfix_str(exercise)  # redrawn now: the bar names the exercise under way
                yield exercise
                bar.update()
        return
    for number, exercise in enumerate(exercises, 1):
        print(f"minigrad: {doing}: {exercise} ({number}/{len(exercises)})", file=sys.stderr, flush=True)
        yield exercise
