"""Warnings blamed on the user's line, as torch's C++ warnings are."""
import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category=UserWarning):
    """``warnings.warn`` at the first frame outside minigrad, however many frames minigrad's call took:
    a fixed ``stacklevel`` counts frames that are not there where minigrad is compiled (the lessons on a
    class's hub: Cython's functions make none)."""
    frame, stacklevel = sys._getframe(0), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(message, category, stacklevel=stacklevel)
