"""Every notebook, top to bottom, as it runs on an Intel CPU: no cell may fail.

Recent PyTorch releases draw dropout's keep mask another way on Intel CPUs (see
helpers/attention/dropout_streams.py), so the same seed prints other dropout patterns
there. Each notebook runs here in a fresh kernel whose CPU dropout draws the Intel way
(tests/intel_cpu.py, installed right after the setup cell): any cell that asserts one
machine's pattern fails. The executed copies are kept in test-artifacts/intel-cpu/, to
read the outputs an Intel machine shows beside the stored ones.
"""

import nbformat
import pytest

from tests.notebook_runs import client_for, problems_of
from tools.course import ROOT, notebook_paths

ARTIFACTS = ROOT / "test-artifacts" / "intel-cpu"
EMULATION = ROOT / "tests" / "intel_cpu.py"
INSTALL = f"""\
import importlib.util
_spec = importlib.util.spec_from_file_location("intel_cpu", {str(EMULATION)!r})
_intel_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_intel_cpu)
_intel_cpu.install()
import torch
with torch.random.fork_rng():  # leaves the notebook's random state as a fresh kernel has it
    torch.manual_seed(123)
    print(torch.nn.Dropout(0.5)(torch.ones(2, 6))[0].tolist())
"""
INTEL_FIRST_ROW = "[2.0, 2.0, 2.0, 2.0, 2.0, 2.0]"  # the first row of the Intel pattern


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda path: path.split("/")[-1])
def test_runs_with_dropout_drawn_as_on_an_intel_cpu(path):
    notebook = nbformat.read(ROOT / path, as_version=4)
    setup = next(i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code")
    notebook.cells.insert(setup + 1, nbformat.v4.new_code_cell(INSTALL))
    client_for(notebook, (ROOT / path).parent).execute()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, ARTIFACTS / (ROOT / path).name)
    installed = notebook.cells[setup + 1]
    assert [output.get("text", "").strip() for output in installed.outputs] == [
        INTEL_FIRST_ROW], "the Intel way of drawing was not installed in the kernel"
    problems = [problem for index, cell in enumerate(notebook.cells)
                if cell.cell_type == "code" for problem in problems_of(cell, index, run=1)]
    assert not problems, f"{path}:\n" + "\n".join(problems)
