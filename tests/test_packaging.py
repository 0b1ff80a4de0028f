"""The install routes agree: pip (pyproject.toml), Binder (environment.yml, postBuild),
CI (.ci/run)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
# What repo2docker builds Binder's image from, at the top level: tools/links.py's Binder
# links name the commit that last changed them.
ENVIRONMENT_FILES = ("environment.yml", "postBuild")
# The other files that repo2docker 2026.4.0 builds from (its buildpacks' binder_path calls),
# or that would make it read another folder, or choose another buildpack than conda's.
OTHER_REPO2DOCKER_FILES = (
    "binder", ".binder", "Dockerfile", "default.nix", "Project.toml", "JuliaProject.toml",
    "REQUIRE", "install.R", "DESCRIPTION", "apt.txt", "runtime.txt", "requirements.txt",
    "requirements3.txt", "Pipfile", "Pipfile.lock", "setup.py", "start")
# conda-forge's names for the course's packages: the CPU-only torch, and matplotlib and
# nbconvert without their Qt and pandoc extras.
CONDA_TO_PIP = {"pytorch-cpu": "torch", "matplotlib-base": "matplotlib",
                "nbconvert-core": "nbconvert"}
# Not the course's packages: the interpreter, the installer, and nomkl (which only keeps
# Intel's MKL out of Binder's image).
NOT_PACKAGES = {"python", "pip", "nomkl"}
# In Binder's image but not imported by the course: what a JupyterHub built from that image
# needs to follow the course's nbgitpuller links (in the test extra too: the JupyterHub
# browser test runs it).
HUB_IMAGE_ONLY = {"nbgitpuller"}
# In repo2docker's own environment, which environment.yml updates: Notebook 7, whose release
# 7.N requires JupyterLab 4.N (notebook 7.6.5's wheel: jupyterlab>=4.6.6,<4.7). When pip
# moves JupyterLab to the tested version, Notebook must move with it, to the same minor.
MOVES_WITH_JUPYTERLAB = {"notebook"}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def normalised(name: str) -> str:
    """A package name as pip compares them: jupyterlab_rise and jupyterlab-rise are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pip_dependencies():
    """pyproject.toml's runtime dependencies: {name: declared specifier}."""
    return {normalised(Requirement(dep).name): str(Requirement(dep).specifier)
            for dep in pyproject()["dependencies"]}


def declared_ranges():
    """Every range pyproject.toml declares, the test extra's included (nbgitpuller's)."""
    declared = {normalised(Requirement(dep).name): Requirement(dep).specifier
                for dep in pyproject()["optional-dependencies"]["test"]}
    declared.update({name: SpecifierSet(spec) for name, spec in pip_dependencies().items()})
    return declared


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


def binder_environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def conda_part(environment):
    """The conda packages of an environment file, under pip's names: {name: spec}."""
    found = {}
    for dep in environment["dependencies"]:
        if isinstance(dep, str):
            name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", dep).groups()
            if name not in NOT_PACKAGES:
                found[normalised(CONDA_TO_PIP.get(name, name))] = spec.replace(" ", "")
    return found


def pip_part(environment):
    """The `pip:` part of an environment file: (its option lines, {name: Requirement})."""
    lines = [line for dep in environment["dependencies"] if isinstance(dep, dict)
             for line in dep.get("pip", [])]
    options = [line for line in lines if line.startswith("-")]
    requirements = {normalised(Requirement(line).name): Requirement(line)
                    for line in lines if not line.startswith("-")}
    return options, requirements


def bounds(spec: str):
    """A conda range `>=A,<=B` as (A, B); None for any other form."""
    try:
        specifiers = {specifier.operator: specifier.version for specifier in SpecifierSet(spec)}
    except ValueError:  # not a PEP 440 specifier, e.g. conda's `2.13.*=cpu*`
        return None
    if set(specifiers) != {">=", "<="} or len(SpecifierSet(spec)) != 2:
        return None
    return specifiers[">="], specifiers["<="]


def binder_problems(environment):
    """What breaks the contract between environment.yml and the course's declared and tested
    versions, one sentence each; none when it holds.

    - every runtime dependency of pyproject.toml (and nbgitpuller) is in it, once;
    - a conda package asks for a range from inside pyproject.toml's range up to
      constraints.txt's pin (what CI tests): never newer than tested;
    - a pip package (for one whose conda-forge name or versions are in doubt) is pinned
      to constraints.txt's version; torch there comes from PyTorch's CPU index.
    """
    declared, pins = declared_ranges(), constraint_pins()
    conda = conda_part(environment)
    options, pip = pip_part(environment)
    problems = []
    wanted = set(pip_dependencies()) | HUB_IMAGE_ONLY
    for name in sorted(wanted - set(conda) - set(pip)):
        problems.append(f"{name} is missing")
    for name in sorted(set(conda) & set(pip)):
        problems.append(f"{name} is in both the conda and the pip part")
    for name in sorted((set(conda) | set(pip)) - wanted - MOVES_WITH_JUPYTERLAB):
        problems.append(f"{name} is not a dependency pyproject.toml declares")
    for name, spec in sorted(conda.items()):
        if name not in wanted:
            continue
        found = bounds(spec)
        if found is None:
            problems.append(f"{name}: {spec!r} is not a range >=FLOOR,<=PIN")
            continue
        lower, upper = found
        if not declared[name].contains(lower, prereleases=True):
            problems.append(f"{name}: {spec} starts below pyproject.toml's {declared[name]}")
        if name not in pins or Version(upper) != Version(pins[name]):
            problems.append(f"{name}: {spec} should end at constraints.txt's {pins.get(name)}")
    for name in sorted(MOVES_WITH_JUPYTERLAB & (set(conda) | set(pip))):
        pinned = [spec.version for spec in pip[name].specifier if spec.operator == "=="] \
            if name in pip else []
        if "jupyterlab" not in pip or len(pinned) != 1 or len(pip[name].specifier) != 1 \
                or Version(pinned[0]).minor != Version(pins["jupyterlab"]).minor:
            problems.append(f"{name}: pinned in the pip part beside JupyterLab, to a release "
                            f"of the same minor as JupyterLab's {pins['jupyterlab']}")
    for name, requirement in sorted(pip.items()):
        if name in MOVES_WITH_JUPYTERLAB:
            continue
        pinned = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if pinned != [pins.get(name)] or len(requirement.specifier) != 1:
            problems.append(f"{name}: the pip part should pin constraints.txt's "
                            f"{pins.get(name)}, not {str(requirement.specifier)!r}")
    if "torch" in pip and f"--extra-index-url {CPU_INDEX}" not in options:
        problems.append(f"torch in the pip part needs `--extra-index-url {CPU_INDEX}`, "
                        "or pip installs a CUDA build")
    return problems


def test_environment_yml_keeps_the_contract():
    assert binder_problems(binder_environment()) == []


def altered(change):
    """environment.yml's content with `change` applied to its dependency list."""
    environment = binder_environment()
    environment["dependencies"] = change(list(environment["dependencies"]))
    return environment


def replaced(conda_name, *new):
    """A change: the conda package `conda_name` replaced by the entries `new`."""
    def change(dependencies):
        [old] = [dep for dep in dependencies
                 if isinstance(dep, str) and re.match(rf"{conda_name}\b(?!-)", dep)]
        index = dependencies.index(old)
        return dependencies[:index] + [dep for dep in new if isinstance(dep, str)] \
            + dependencies[index + 1:] + [dep for dep in new if isinstance(dep, dict)]
    return change


PINS = constraint_pins()
[NUMPY_FLOOR] = [spec.version for spec in declared_ranges()["numpy"] if spec.operator == ">="]
NUMPY, RISE, TORCH = PINS["numpy"], PINS["jupyterlab-rise"], PINS["torch"]


@pytest.mark.parametrize("change, problem", [
    (replaced("numpy"), "numpy is missing"),
    (replaced("numpy", f"numpy =={NUMPY}"), f"numpy: '=={NUMPY}' is not a range"),
    (replaced("numpy", f"numpy >={NUMPY_FLOOR}"), f"numpy: '>={NUMPY_FLOOR}' is not a range"),
    (replaced("numpy", f"numpy >=1.0,<={NUMPY}"), f"starts below pyproject.toml's >={NUMPY_FLOOR}"),
    (replaced("numpy", f"numpy >={NUMPY_FLOOR},<={NUMPY}.post1"),
     f"should end at constraints.txt's {NUMPY}"),  # newer than tested
    (replaced("numpy", f"numpy >={NUMPY_FLOOR},<={NUMPY_FLOOR}"),
     f"should end at constraints.txt's {NUMPY}"),  # leaves the tested version out
    (replaced("jupyterlab_rise", {"pip": [f"jupyterlab-rise=={RISE}.post1"]}),
     f"jupyterlab-rise: the pip part should pin constraints.txt's {RISE}"),
    (replaced("jupyterlab_rise", {"pip": ["jupyterlab-rise"]}),
     f"jupyterlab-rise: the pip part should pin constraints.txt's {RISE}"),
    (replaced("pytorch-cpu", {"pip": [f"torch=={TORCH}"]}),
     "torch in the pip part needs `--extra-index-url"),
    (replaced("numpy", f"numpy >={NUMPY_FLOOR},<={NUMPY}", {"pip": [f"numpy=={NUMPY}"]}),
     "numpy is in both the conda and the pip part"),
    (replaced("nomkl", "nomkl", "scipy >=1.0,<=2.0"), "scipy is not a dependency"),
    (replaced("nomkl", "nomkl", {"pip": ["notebook==7.4.7"]}),
     "notebook: pinned in the pip part beside JupyterLab"),
    (replaced("nomkl", "nomkl", "notebook >=7.6,<=7.6.5"),
     "notebook is in both the conda and the pip part"),
])
def test_a_broken_contract_is_named(change, problem):
    problems = binder_problems(altered(change))
    assert any(problem in found for found in problems), problems


@pytest.mark.parametrize("conda_name, moved", [
    ("jupyterlab_rise", {"pip": [f"jupyterlab-rise=={RISE}"]}),
    ("pytorch-cpu", {"pip": [f"--extra-index-url {CPU_INDEX}", f"torch=={TORCH}"]}),
])
def test_a_package_moved_to_the_pip_part_at_its_pin_keeps_the_contract(conda_name, moved):
    assert binder_problems(altered(replaced(conda_name, moved))) == []


def test_binder_python_is_one_minor_version_the_course_supports():
    [python] = [dep for dep in binder_environment()["dependencies"]
                if isinstance(dep, str) and dep.startswith("python")]
    minor = re.fullmatch(r"python\s*=\s*(3\.\d+)", python)
    assert minor, f"environment.yml should name one Python minor version, not {python!r}"
    assert Requirement(f"python{pyproject()['requires-python']}").specifier.contains(
        f"{minor.group(1)}.0")


def test_binder_keeps_mkl_out():
    assert "nomkl" in binder_environment()["dependencies"]


def test_binder_gets_cpu_only_pytorch_from_conda_forge():
    environment = binder_environment()
    assert environment["channels"][0] == "conda-forge"
    names = [re.match(r"[A-Za-z0-9_.-]+", dep).group() for dep in environment["dependencies"]
             if isinstance(dep, str)]
    assert "pytorch-cpu" in names
    assert not {"pytorch", "pytorch-gpu", "cudatoolkit", "cuda-version"} & set(names)


def test_binder_runs_the_jupyterlab_the_tests_run():
    """repo2docker's own environment already holds a JupyterLab, and environment.yml only
    updates it: a range that version satisfies could leave it there. So JupyterLab is
    pinned exactly, to constraints.txt's version (pip's, while conda-forge's is in doubt)."""
    _, pip = pip_part(binder_environment())
    assert "jupyterlab" not in conda_part(binder_environment())
    assert str(pip["jupyterlab"].specifier) == f"=={PINS['jupyterlab']}"
    assert set(pip) >= MOVES_WITH_JUPYTERLAB  # checked against JupyterLab in the contract


def test_repo2docker_builds_from_environment_yml_and_postbuild_alone():
    """The Binder links name the commit that last changed environment.yml or postBuild
    (tools/links.py): another file repo2docker builds from would change the image without
    the links noticing. (A binder/ folder would make it ignore the top-level files.)"""
    assert all((ROOT / name).is_file() for name in ENVIRONMENT_FILES)
    assert [name for name in OTHER_REPO2DOCKER_FILES if (ROOT / name).exists()] == []


def test_postbuild_installs_nothing():
    """The image is the environment alone: the course comes in through nbgitpuller, and a
    pip install here would read the repository's other files (and could pull a CUDA
    torch), so the image would no longer depend on environment.yml and postBuild alone."""
    post_build = (ROOT / "postBuild").read_text()
    assert post_build.startswith("#!/bin/bash") and "set -e" in post_build
    assert not re.search(r"\bpip\b|\bconda\b|\bmamba\b", "\n".join(
        line for line in post_build.splitlines() if not line.lstrip().startswith("#")))
    assert os.access(ROOT / "postBuild", os.X_OK)


def test_postbuild_runs_with_nothing_but_the_environment_files(tmp_path):
    """repo2docker runs postBuild from the repository's folder, the learner's home. Here
    it runs in a folder holding environment.yml and postBuild alone (so it reads nothing
    else, and the image depends on those two files only), with a stand-in `jupyter` that
    records its arguments; it leaves the folder as it was."""
    home, stand_ins = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    stand_ins.mkdir()
    for name in ENVIRONMENT_FILES:
        (home / name).write_bytes((ROOT / name).read_bytes())
    before = sorted(path.relative_to(home) for path in home.rglob("*"))
    jupyter = stand_ins / "jupyter"
    jupyter.write_text(f'#!/bin/bash\necho "$@" >> "{tmp_path / "jupyter-calls"}"\n')
    jupyter.chmod(0o755)
    environment = {**os.environ, "PATH": os.pathsep.join([str(stand_ins),
                                                          os.environ.get("PATH", "")])}
    run = subprocess.run(["bash", "postBuild"], cwd=home, env=environment,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(path.relative_to(home) for path in home.rglob("*")) == before
    assert (tmp_path / "jupyter-calls").read_text().splitlines() == [
        "labextension disable --level=sys_prefix @jupyterlab/mathjax3-extension"]


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


# The runtime packages whose lower bounds the floors profile installs; jupyterlab,
# nbconvert and jupyterlab-rise are front ends the notebooks do not import.
FLOORED = ["torch", "numpy", "matplotlib", "pillow", "ipywidgets", "ipykernel"]


def test_the_floors_profile_installs_the_declared_lower_bounds():
    declared, floors = pip_dependencies(), profile_pins("floors")
    for name in FLOORED:
        lower = [Version(spec.version) for spec in
                 Requirement(f"{name}{declared[name]}").specifier if spec.operator == ">="]
        assert lower == [Version(floors[name])], \
            f"{name}: declared {declared[name]}, floors profile installs {floors.get(name)}"


@pytest.mark.parametrize("profile", ["colab", "floors", "newest"])
def test_every_profile_is_inside_the_declared_ranges(profile):
    declared, pins = pip_dependencies(), profile_pins(profile)
    for name in FLOORED:
        assert Requirement(f"{name}{declared[name]}").specifier.contains(pins[name]), \
            (profile, name, pins[name])


def test_the_newest_profile_is_the_pinned_stack_but_for_newer_releases():
    """It differs from constraints.txt only where it takes a newer release (matplotlib
    3.11, which constraints.txt holds back), and in at least one package."""
    pins, newest = constraint_pins(), profile_pins("newest")
    newer = [name for name in newest if Version(newest[name]) > Version(pins[name])]
    older = [name for name in newest if Version(newest[name]) < Version(pins[name])]
    assert newer and older == [], (newer, older)


def test_the_colab_profile_is_colabs_published_stack():
    """Google Colab's runtime (googlecolab/backend-info, Aug 2026)."""
    pins = profile_pins("colab")
    assert {name: pins[name] for name in ["torch", "matplotlib", "ipywidgets", "numpy",
                                          "pillow", "ipykernel"]} == {
        "torch": "2.11.0", "matplotlib": "3.10.0", "ipywidgets": "7.7.1", "numpy": "2.1.3",
        "pillow": "11.3.0", "ipykernel": "6.17.1"}


@pytest.mark.slow
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


def test_benchmarks_ci_and_tools_import_nothing_from_tests():
    """What they share with the tests lives in tools/ (tools/explorer_step.py,
    tools/browser/): tests/ is not shipped with a copy of the course, and a benchmark must
    not break when a test changes."""
    importing = [path.relative_to(ROOT).as_posix()
                 for folder in ("benchmarks", ".ci", "tools")
                 for path in (ROOT / folder).rglob("*.py")
                 if re.search(r"^\s*(from|import) tests\b", path.read_text(encoding="utf-8"),
                              flags=re.M)]
    assert importing == []


def test_the_readme_names_the_jupyterlab_the_image_runs():
    """The hub admins' paragraph names the JupyterLab that environment.yml pins."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    hub_admins = readme[readme.index("## For hub admins"):]
    assert f"JupyterLab {PINS['jupyterlab']}" in hub_admins
