"""The course's tools around minigrad, kept out of the engine.

* ``coursekit.testing``: one scenario run with torch and with minigrad, compared; the exercises'
  ``check`` and ``graded``.
* ``coursekit.viz``: pictures of a backward graph (torch's or minigrad's), and minigrad's backward
  one node at a time.

The grader stages this package beside each exercise's minigrad; graded code may not import it.
"""
