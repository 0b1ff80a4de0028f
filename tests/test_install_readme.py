"""The README's install commands do what it says.

Without make, the README does what `make lab` does: the same virtual environment, torch
first as a CPU build, the course with the same constraints file and no test tools, the
same JupyterLab extension switched off, JupyterLab on the same notebook folder (root told
to allow root). With make, `make lab` installs the course and not the test tools,
`make test` adds them, and later runs install nothing (checked with `make -n`)."""

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text()
_spec = importlib.util.spec_from_file_location("install_torch", ROOT / "install_torch.py")
install_torch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_torch)


def readme_section():
    """The README's "Without make" section."""
    assert "\n### Without make\n" in README, "the README has no section \"### Without make\""
    return README.split("\n### Without make\n")[1].split("\n## ")[0]


def readme_commands():
    """The commands of the README's "Without make" section, in order, comments left out."""
    section = readme_section()
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            command = line.split("#")[0].strip()
            if command:
                commands.append(command)
    return commands


def make_variable(name):
    return re.search(rf"^{name}\s*:?=\s*(\S+)", MAKEFILE, flags=re.M).group(1)


def make_recipe(target):
    """A target's recipe lines, with $(BIN) and $(VENV) expanded."""
    recipe = MAKEFILE.split(f"\n{target}:")[1].split("\n\n")[0].splitlines()[1:]
    bin_dir = make_variable("BIN").replace("$(VENV)", make_variable("VENV"))
    return [line.strip().replace("$(BIN)", bin_dir) for line in recipe]


def pip_installs(commands):
    """Each `pip install` as (its options as a dict, the packages it names)."""
    installs = []
    for command in commands:
        words = shlex.split(command)
        if "pip" not in words or "install" not in words:
            continue
        words = words[words.index("install") + 1:]
        options, packages = {}, []
        while words:
            word = words.pop(0)
            if word in ("-c", "--constraint", "--index-url", "-e"):
                options[word] = words.pop(0)
            elif word.startswith("-"):
                options[word] = True
            else:
                packages.append(word)
        installs.append((options, packages))
    return installs


def extras(requirement):
    """'.[test]' -> ('.', {'test'})"""
    target, _, names = requirement.partition("[")
    return target, set(filter(None, names.rstrip("]").split(",")))


def test_the_section_is_found_and_holds_every_step():
    commands = readme_commands()
    assert any("-m venv" in command for command in commands)
    assert any("activate" in command.lower() for command in commands)
    assert len(pip_installs(commands)) == 3
    assert any(command.startswith("jupyter labextension disable") for command in commands)
    assert any(command.startswith("jupyter lab ") for command in commands)


def test_the_same_virtual_environment_folder():
    venv = make_variable("VENV")
    commands = readme_commands()
    assert [c for c in commands if "-m venv" in c] == [
        f"python3 -m venv {venv}", f"py -m venv {venv}"]
    assert f"source {venv}/bin/activate" in commands  # Linux, macOS
    assert f"{venv}\\Scripts\\Activate.ps1" in commands  # Windows PowerShell


def test_torch_first_from_the_same_constraints_and_cpu_index_as_make():
    """install_torch.py (run by make) and the README: torch alone, pinned by the same file,
    from PyTorch's CPU index on Linux and from PyPI on Windows and macOS."""
    torch_installs = [(options, packages) for options, packages in
                      pip_installs(readme_commands()) if packages == ["torch"]]
    assert [options.get("--index-url") for options, _ in torch_installs] == [
        install_torch.CPU_INDEX, None]
    for options, _ in torch_installs:
        assert options["-c"] == install_torch.CONSTRAINTS.name
    assert install_torch.CONSTRAINTS == ROOT / "constraints.txt"


def test_the_course_with_the_same_constraints_and_extras_as_make():
    """make lab's install and the README's: the course alone, no test tools; the README names
    the extra that make test adds."""
    [make_course] = pip_installs(line for line in make_recipe("$(STAMP)") if "-e" in line)
    [make_tests] = pip_installs(line for line in make_recipe("$(TEST_STAMP)") if "-e" in line)
    installs = pip_installs(readme_commands())
    readme_course = installs[-1]
    assert readme_course[0]["-c"] == make_course[0]["-c"] == make_tests[0]["-c"] \
        == "constraints.txt"
    assert extras(readme_course[0]["-e"]) == extras(make_course[0]["-e"]) == (".", set())
    # torch comes first, as in the Makefile (whose recipe runs install_torch.py first).
    assert all(packages == ["torch"] for _, packages in installs[:-1])
    named = re.findall(r'-e "([^"]+)" adds the test tools', readme_section())
    assert [extras(target) for target in named] == [extras(make_tests[0]["-e"])] == [
        (".", {"test"})]


def test_the_same_jupyterlab_extension_switched_off_as_make():
    """After the course (jupyterlab-rise brings jupyterlab-mathjax3), before JupyterLab."""
    [make_disable] = [line for line in make_recipe("$(STAMP)") if "labextension" in line]
    make_disable = make_disable.replace(f"{make_variable('VENV')}/bin/", "").replace(
        "$(MATHJAX3)", make_variable("MATHJAX3")).split(">")[0].strip()
    commands = readme_commands()
    [readme_disable] = [c for c in commands if c.startswith("jupyter labextension")]
    assert readme_disable == make_disable == (
        "jupyter labextension disable --level=sys_prefix @jupyterlab/mathjax3-extension")
    [lab] = [c for c in commands if c.startswith("jupyter lab ")]
    course = [c for c in commands if "-e" in shlex.split(c)][-1]
    assert commands.index(course) < commands.index(readme_disable) < commands.index(lab)


def test_root_is_told_to_allow_root_as_make_does():
    root_flag = re.search(r"^ROOT_FLAG\s*:?=(.*)$", MAKEFILE, flags=re.M).group(1)
    assert "filter 0,$(shell id -u)" in root_flag and "--allow-root" in root_flag
    assert any("$(ROOT_FLAG)" in line for line in make_recipe("lab"))
    [readme_lab] = [line for line in readme_section().splitlines()
                    if line.startswith("jupyter lab ")]
    assert readme_lab.split("#")[1].strip() == "as root, add --allow-root"


def test_jupyter_lab_on_the_same_notebook_folder():
    [make_lab] = [line for line in make_recipe("lab") if " lab " in line]
    [readme_lab] = [c for c in readme_commands() if c.startswith("jupyter lab ")]

    def notebook_dir(command):
        [option] = [word for word in shlex.split(command) if word.startswith("--notebook-dir")]
        return option.split("=", 1)[1]

    assert notebook_dir(readme_lab) == notebook_dir(make_lab) == "notebooks"


@pytest.mark.parametrize("fragment", ["TORCH_INDEX_URL=URL",
                                      "TORCH_INDEX_URL=https://pypi.org/simple"])
def test_contributing_names_the_choices_install_torch_offers(fragment):
    """The choices are a maintainer's detail: CONTRIBUTING.md's "The install" names them,
    and the README links there (a learner whose install stops is told them by the
    install itself)."""
    with pytest.raises(install_torch.NoCpuBuild) as refused:
        install_torch.plan("Linux", None, "2.13.0", install_torch.CPU_INDEX,
                           lambda url: "timed out", lambda: None)
    assert fragment in str(refused.value)
    assert "\n## The install\n" in CONTRIBUTING, "CONTRIBUTING.md has no \"## The install\""
    install = CONTRIBUTING.split("\n## The install\n")[1].split("\n## ")[0]
    assert f"make lab {fragment}" in " ".join(install.split())  # wrapped lines or not
    assert "](CONTRIBUTING.md#the-install)" in README


# What make would run (`make -n`), in a folder holding only the Makefile and the files its
# installs depend on, with the stamps of the installs already done.
INSTALL_INPUTS = ("Makefile", "pyproject.toml", "constraints.txt")
BEFORE, AFTER = 1_000_000_000, 1_000_001_000  # file times: inputs, then stamps


def top_level_make_environment() -> dict:
    """This process's environment without what a calling make passes down (`make test`
    runs these tests): a make run inside it would otherwise print its own entering and
    leaving lines, and take the caller's flags."""
    return {name: value for name, value in os.environ.items()
            if name not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}


def make_would_run(folder: Path, target: str, done=()):
    """The commands `make -n target` prints in `folder`, with the stamps in `done` made
    after the install inputs were last changed."""
    for name in INSTALL_INPUTS:
        os.utime(folder / name, (BEFORE, BEFORE))
    for stamp in done:
        path = folder / make_variable(stamp).replace("$(VENV)", make_variable("VENV"))
        path.parent.mkdir(exist_ok=True)
        path.touch()
        os.utime(path, (AFTER, AFTER))
    run = subprocess.run(["make", "-n", target], cwd=folder, capture_output=True, text=True,
                         env=top_level_make_environment())
    assert run.returncode == 0, run.stderr
    return [line for line in run.stdout.splitlines() if not line.startswith("#")]


def installs_of(commands):
    """What the commands install, in order: "torch", "course", "course[test]", "mathjax3
    off"."""
    found = []
    for command in commands:
        if re.search(r"python install_torch\.py\b", command):
            found.append("torch")
        elif "labextension disable" in command:
            found.append("mathjax3 off")
        for options, _ in pip_installs([command]):
            target, names = extras(options["-e"])
            found.append("course" + (f"[{','.join(sorted(names))}]" if names else ""))
    return found


@pytest.fixture
def course_folder(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("needs make")
    for name in INSTALL_INPUTS:
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("target, done, installs", [
    # A fresh clone: lab installs the course only; test installs it, then the test tools.
    ("lab", [], ["torch", "course", "mathjax3 off"]),
    ("test", [], ["torch", "course", "mathjax3 off", "course[test]"]),
    ("lint", [], ["torch", "course", "mathjax3 off", "course[test]"]),
    # test after lab adds the test tools alone; lab after test installs nothing.
    ("test", ["STAMP"], ["course[test]"]),
    ("lab", ["STAMP", "TEST_STAMP"], []),
    ("test", ["STAMP", "TEST_STAMP"], []),
])
def test_each_make_target_installs_what_it_needs_once(course_folder, target, done, installs):
    commands = make_would_run(course_folder, target, done)
    assert installs_of(commands) == installs, commands
    runs = {"lab": "jupyter lab", "test": "python -m pytest", "lint": "ruff check"}[target]
    assert runs in commands[-1]


def test_a_changed_constraints_file_installs_both_again(course_folder):
    commands = make_would_run(course_folder, "test", ["STAMP", "TEST_STAMP"])
    assert installs_of(commands) == []
    (course_folder / "constraints.txt").touch()  # now newer than both stamps
    run = subprocess.run(["make", "-n", "test"], cwd=course_folder, capture_output=True,
                         text=True, check=True, env=top_level_make_environment())
    assert installs_of(run.stdout.splitlines()) == [
        "torch", "course", "mathjax3 off", "course[test]"]
