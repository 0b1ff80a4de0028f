import matplotlib
import pytest
import torch

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _fixed_seed():
    """Every test starts from the same global RNG state."""
    torch.manual_seed(0)
