"""Marks the tests expected_failures.py lists as strict xfail: with minigrad both of its lists, with
torch itself (UPSTREAM_LIBRARY=torch) the tests that fail with the installed torch too."""
import os
from pathlib import Path

import pytest

from expected_failures import EXPECTED_FAILURES, TORCH_FAILS_TOO

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    listed = dict(TORCH_FAILS_TOO)
    if os.environ.get("UPSTREAM_LIBRARY") != "torch":
        listed.update(EXPECTED_FAILURES)
    for item in items:
        if Path(str(item.fspath)).resolve().parent != HERE:
            continue
        reason = listed.get(item.nodeid.split("::", 1)[1])
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
