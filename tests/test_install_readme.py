"""The README's install without make does what `make lab` does: same virtual environment,
torch first as a CPU build, the course with the same constraints file and extras, JupyterLab
on the same notebook folder."""

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
_spec = importlib.util.spec_from_file_location("install_torch", ROOT / "install_torch.py")
install_torch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_torch)


def readme_commands():
    """The commands of the README's "Without make" section, in order, comments left out."""
    assert "\n### Without make\n" in README, "the README has no section \"### Without make\""
    section = README.split("\n### Without make\n")[1].split("\n## ")[0]
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
    assert any(command.startswith("jupyter lab") for command in commands)


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
    [make_course] = pip_installs(line for line in make_recipe("$(STAMP)") if "-e" in line)
    installs = pip_installs(readme_commands())
    readme_course = installs[-1]
    assert readme_course[0]["-c"] == make_course[0]["-c"] == "constraints.txt"
    assert extras(readme_course[0]["-e"]) == extras(make_course[0]["-e"]) == (".", {"test"})
    # torch comes first, as in the Makefile (whose recipe runs install_torch.py first).
    assert all(packages == ["torch"] for _, packages in installs[:-1])
    assert "-e . without the test tools" in README  # the course without its test extra


def test_jupyter_lab_on_the_same_notebook_folder():
    [make_lab] = [line for line in make_recipe("lab") if " lab " in line]
    [readme_lab] = [c for c in readme_commands() if c.startswith("jupyter lab")]

    def notebook_dir(command):
        [option] = [word for word in shlex.split(command) if word.startswith("--notebook-dir")]
        return option.split("=", 1)[1]

    assert notebook_dir(readme_lab) == notebook_dir(make_lab) == "notebooks"


@pytest.mark.parametrize("fragment", ["TORCH_INDEX_URL=URL",
                                      "TORCH_INDEX_URL=https://pypi.org/simple"])
def test_the_readme_names_the_choices_install_torch_offers(fragment):
    with pytest.raises(install_torch.NoCpuBuild) as refused:
        install_torch.plan("Linux", None, "2.13.0", install_torch.CPU_INDEX,
                           lambda url: "timed out", lambda: None)
    assert fragment in str(refused.value)
    assert f"make lab {fragment}" in " ".join(README.split())  # wrapped lines or not
