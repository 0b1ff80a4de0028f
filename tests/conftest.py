import shutil

import matplotlib
import pytest
import torch
from filelock import FileLock

from tools import deck
from tools.course import ROOT

matplotlib.use("Agg")

SLIDE_ASSETS = ROOT / "build" / "slides-assets"


@pytest.fixture(autouse=True)
def _fixed_seed():
    """Every test starts from the same global RNG state."""
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def slide_assets():
    """build/slides-assets (reveal.js, MathJax, ...) installed with npm, as `make slides`
    does, for the tests of the offline deck. Under pytest-xdist, workers that ask at once
    wait on a file lock while the first installs (pytest-xdist's recipe for a session
    fixture run once); later calls of ``deck.install`` find it done."""
    if shutil.which("npm") is None:
        pytest.skip("npm not found: the offline deck installs reveal.js, "
                    "MathJax and the rest from npm (Debian/Ubuntu: `apt-get install npm`)")
    SLIDE_ASSETS.parent.mkdir(exist_ok=True)
    with FileLock(f"{SLIDE_ASSETS}.lock"):
        deck.install(SLIDE_ASSETS)
    return SLIDE_ASSETS
