"""Warnings blamed on the line torch's are blamed on, where minigrad is compiled too (the lessons on a
class's hub): Cython's functions make no frames, so a fixed ``stacklevel`` would count frames that are not
there. Where torch blames a line of its own Python (an optimizer's ``__init__``, gradcheck's), minigrad
from source names its own line that stands for it; compiled, the nearest line that has a frame: the
caller's, or that of a module of minigrad's that is not compiled (Adam's ``__init__``)."""
import warnings
from importlib.machinery import EXTENSION_SUFFIXES


def _compiled(path):
    return path.endswith(tuple(EXTENSION_SUFFIXES))


_OWN_FRAME = 0 if _compiled(__file__) else 1


def warn(message, category, module, frames=1):
    """``warnings.warn`` at the line ``frames`` calls above this one's caller, those calls being functions of
    ``module`` (the caller's ``__file__``), which make no frames where it is compiled. The frames are not
    looked up: the grading process refuses that while learner code runs."""
    warnings.warn(message, category, stacklevel=1 + _OWN_FRAME + (0 if _compiled(module) else frames))
