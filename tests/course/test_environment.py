"""environment.yml (conda) and pyproject.toml (pip) install the same packages with the same versions."""
import re
import tomllib

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from grader.build import ROOT

CONDA_NAMES = {"torch": "pytorch", "psycopg2-binary": "psycopg2", "RestrictedPython": "restrictedpython"}  # the same package, named by conda-forge
EXTRAS = ("test", "course", "viz")  # what ./run installs; `kernels` (Triton) is optional in both


def pip_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"]) + [r for extra in EXTRAS for r in project["optional-dependencies"][extra]]
    requirements = {}
    for text in names:
        requirement = Requirement(text)
        if requirement.name != "minigrad":  # minigrad[viz] inside `course`: its packages are listed under viz
            requirements[CONDA_NAMES.get(requirement.name, requirement.name)] = requirement.specifier
    return requirements


def conda_requirements():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    requirements = {}
    for spec in environment["dependencies"]:
        name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", spec).groups()
        if name not in ("python", "pip"):
            requirements[name] = SpecifierSet(version)
    return requirements


def test_conda_and_pip_install_the_same_packages_and_versions():
    assert conda_requirements() == pip_requirements()


def test_condas_python_is_one_pyproject_accepts():
    python = next(spec for spec in yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
                  if spec.startswith("python="))
    requires = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])
    assert python.split("=")[1] + ".0" in requires
