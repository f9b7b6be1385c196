"""The port's bookkeeping: every upstream test is restated in test_autograd.py or named in
not_ported.py (once, not both), as many as upstream defines; every expected failure names a test
that exists."""
import ast
import itertools
from pathlib import Path

from expected_failures import EXPECTED_FAILURES, TORCH_FAILS_TOO
from not_ported import NOT_PORTED, UPSTREAM_TEST_COUNTS

SOURCE = Path(__file__).resolve().parent / "test_autograd.py"


def restated():
    """{class: [test, ...]} as test_autograd.py defines them (before parametrizing and devices)."""
    tree = ast.parse(SOURCE.read_text())
    return {node.name: [f.name for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")]
            for node in tree.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test")}


def test_every_upstream_test_is_restated_or_named_not_ported_once():
    ours = restated()
    assert set(ours) <= set(UPSTREAM_TEST_COUNTS) and set(NOT_PORTED) <= set(UPSTREAM_TEST_COUNTS)
    for cls, count in UPSTREAM_TEST_COUNTS.items():
        ported, not_ported = ours.get(cls, []), NOT_PORTED.get(cls, {})
        assert len(set(ported)) == len(ported), cls
        assert not set(ported) & set(not_ported), cls
        assert len(ported) + len(not_ported) == count, cls


def test_every_expected_failure_names_a_restated_test():
    ours = restated()
    for name in itertools.chain(TORCH_FAILS_TOO, EXPECTED_FAILURES):
        cls, test = name.split("::")
        generic = cls[:-len("CPU")] if cls.endswith("CPU") else cls[:-len("CUDA")] if cls.endswith("CUDA") else cls
        assert any(test == t or test.startswith(t + "_") for t in ours[generic]), name
