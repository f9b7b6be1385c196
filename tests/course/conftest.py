"""The exercises' staged packages, which these tests grade, run or read."""
from grader.build import ROOT, stage


def pytest_configure(config):
    """Stage each exercise's minigrad (build outputs) from the current minigrad/, with the reference's
    results Validate reads, before these tests are collected (again only when the sources changed)."""
    stage(ROOT)
