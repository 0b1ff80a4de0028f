"""The install routes agree: pip (pyproject.toml), Binder (environment.yml), CI (.ci/run)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
# conda-forge's names for the course's packages: the CPU-only torch, and matplotlib and
# nbconvert without their Qt and pandoc extras.
CONDA_TO_PIP = {"pytorch-cpu": "torch", "matplotlib-base": "matplotlib",
                "nbconvert-core": "nbconvert"}
# Not the course's packages: the interpreter, the installer, and nomkl (which only keeps
# Intel's MKL out of Binder's image).
NOT_PACKAGES = {"python", "pip", "nomkl"}
# In Binder's image but not imported by the course: what a JupyterHub built from that image
# needs to follow the course's nbgitpuller links (pinned in constraints.txt too: the
# JupyterHub browser test runs it).
HUB_IMAGE_ONLY = {"nbgitpuller"}


def normalised(name: str) -> str:
    """A package name as pip compares them: jupyterlab_rise and jupyterlab-rise are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalised(Requirement(dep).name): str(Requirement(dep).specifier)
            for dep in project["dependencies"]}


def conda_dependencies():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    found = {}
    for dep in environment["dependencies"]:
        assert isinstance(dep, str), "environment.yml should need no pip section"
        name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", dep).groups()
        if name not in NOT_PACKAGES:
            found[normalised(CONDA_TO_PIP.get(name, name))] = spec.replace(" ", "")
    return found, environment


def constraint_pins():
    """The versions CI tests: constraints.txt's `name==version` lines."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            [spec] = requirement.specifier
            assert spec.operator == "==", f"constraints.txt should pin {requirement.name}"
            pins[normalised(requirement.name)] = spec.version
    return pins


def conda_pins():
    """environment.yml's packages (pip names) and the exact versions it pins them to."""
    conda, _ = conda_dependencies()
    pins = {}
    for name, spec in conda.items():
        assert re.fullmatch(r"==[0-9][0-9A-Za-z.]*", spec), \
            f"environment.yml should pin {name} to an exact version (==X.Y.Z), not {spec!r}"
        pins[name] = spec[2:]
    return pins


def test_environment_yml_names_the_packages_pyproject_toml_names():
    assert set(conda_pins()) == set(pip_dependencies()) | HUB_IMAGE_ONLY


def test_environment_yml_pins_the_versions_ci_tests():
    """Binder gets constraints.txt's versions, so that a new release cannot break it."""
    tested = constraint_pins()
    for name, version in conda_pins().items():
        assert name in tested, f"{name} is pinned in environment.yml, not in constraints.txt"
        assert version == tested[name], \
            f"{name}: environment.yml pins {version}, constraints.txt {tested[name]}"


def test_environment_yml_pins_are_inside_the_declared_ranges():
    declared = pip_dependencies()
    for name, version in conda_pins().items():
        if name in HUB_IMAGE_ONLY:
            continue
        assert Requirement(f"{name}{declared[name]}").specifier.contains(version), \
            f"{name}: environment.yml pins {version}, pyproject.toml declares {declared[name]}"


def test_binder_python_is_one_minor_version_the_course_supports():
    _, environment = conda_dependencies()
    [python] = [dep for dep in environment["dependencies"] if dep.startswith("python")]
    minor = re.fullmatch(r"python\s*=\s*(3\.\d+)", python)
    assert minor, f"environment.yml should name one Python minor version, not {python!r}"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert Requirement(f"python{requires['requires-python']}").specifier.contains(
        f"{minor.group(1)}.0")


def test_binder_keeps_mkl_out():
    _, environment = conda_dependencies()
    assert "nomkl" in environment["dependencies"]


def test_binder_gets_cpu_only_pytorch_from_conda_forge():
    _, environment = conda_dependencies()
    assert environment["channels"][0] == "conda-forge"
    names = [dep.split(">")[0].split("=")[0] for dep in environment["dependencies"]]
    assert "pytorch-cpu" in names
    assert not {"pytorch", "pytorch-gpu", "cudatoolkit", "cuda-version"} & set(names)


def test_postbuild_installs_helpers_without_pulling_torch_again():
    post_build = (ROOT / "postBuild").read_text()
    assert post_build.startswith("#!/bin/bash") and "set -e" in post_build
    assert "pip install --no-deps ." in post_build


def test_pinned_versions_satisfy_the_declared_ranges():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            pins[normalised(requirement.name)] = next(iter(requirement.specifier)).version
    for name, spec in pip_dependencies().items():
        assert name in pins, f"{name} has no pinned version in constraints.txt"
        assert Requirement(f"{name}{spec}").specifier.contains(pins[name]), (name, pins[name])


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / "README.md").read_text()


def profile_pins(name: str) -> dict:
    """The exact versions a package profile installs (.ci/profiles/<name>.txt)."""
    pins = {}
    for line in (ROOT / ".ci" / "profiles" / f"{name}.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            pins[normalised(requirement.name)] = next(iter(requirement.specifier)).version
    return pins


# The runtime packages whose lower bounds the floors profile installs; torch's floor is
# not installable on CI's machine (the profiles use its local CPU build), and jupyterlab,
# nbconvert and jupyterlab-rise are front ends the notebooks do not import.
FLOORED = ["numpy", "matplotlib", "pillow", "ipywidgets", "ipykernel"]


def test_the_floors_profile_installs_the_declared_lower_bounds():
    declared, floors = pip_dependencies(), profile_pins("floors")
    for name in FLOORED:
        lower = [Version(spec.version) for spec in
                 Requirement(f"{name}{declared[name]}").specifier if spec.operator == ">="]
        assert lower == [Version(floors[name])], \
            f"{name}: declared {declared[name]}, floors profile installs {floors.get(name)}"


@pytest.mark.parametrize("profile", ["colab", "floors"])
def test_every_profile_is_inside_the_declared_ranges(profile):
    declared, pins = pip_dependencies(), profile_pins(profile)
    for name in FLOORED + ["torch"]:
        assert Requirement(f"{name}{declared[name]}").specifier.contains(pins[name]), \
            (profile, name, pins[name])


def test_the_colab_profile_is_colabs_published_stack():
    """Google Colab's runtime (googlecolab/backend-info, Aug 2026), torch aside."""
    pins = profile_pins("colab")
    assert {name: pins[name] for name in ["matplotlib", "ipywidgets", "numpy", "pillow",
                                          "ipykernel"]} == {
        "matplotlib": "3.10.0", "ipywidgets": "7.7.1", "numpy": "2.1.3", "pillow": "11.3.0",
        "ipykernel": "6.17.1"}


def test_no_enabled_jupyterlab_extension_is_incompatible():
    """`jupyter labextension list` marks an extension JupyterLab cannot load with an X;
    make install switches off the one jupyterlab-rise pulls in (jupyterlab-mathjax3)."""
    listing = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                             capture_output=True, text=True, check=True)
    rows = [line.split() for line in (listing.stdout + listing.stderr).splitlines()]
    extensions = [row for row in rows if len(row) >= 3 and row[1].startswith("v")]
    assert any(row[0] == "jupyterlab-rise" for row in extensions), listing.stdout
    plain = [[re.sub(r"\x1b\[[0-9;]*m", "", word) for word in row] for row in extensions]
    broken = [row[0] for row in plain if "enabled" in row and "X" in row]
    assert broken == [], f"enabled but incompatible with this JupyterLab: {broken}"
    assert "@jupyterlab/mathjax3-extension" in [row[0] for row in plain if "disabled" in row]
