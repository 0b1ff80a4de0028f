"""The input checks shared by the helpers."""

import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.validation import broadcast_shape

shapes = st.lists(st.integers(1, 4), max_size=4).map(tuple)


@settings(deadline=None)  # the first call imports sympy inside torch
@given(st.lists(shapes, min_size=1, max_size=3))
def test_broadcast_shape_agrees_with_torch(many_shapes):
    try:
        expected = tuple(torch.broadcast_shapes(*many_shapes))
    except RuntimeError:
        expected = None
    assert broadcast_shape(*many_shapes) == expected


@pytest.mark.parametrize("shapes, expected", [
    (((6, 6), (2, 6, 6)), (2, 6, 6)),
    (((1, 6), (6, 1)), (6, 6)),
    (((8, 8), (6, 6)), None),
    (((), (3,)), (3,)),
])
def test_broadcast_shape_examples(shapes, expected):
    assert broadcast_shape(*shapes) == expected


def test_attention_helpers_do_not_import_sympy():
    # torch.broadcast_shapes imports sympy: half a second of every notebook's run time.
    code = (
        "import sys, torch\n"
        "from helpers.attention import CausalAttention, MultiHeadAttention, padding_mask\n"
        "x = torch.rand(2, 6, 3)\n"
        "CausalAttention(3, 2, context_length=6)(x, padding_mask=padding_mask([6, 4], 6))\n"
        "MultiHeadAttention(3, 4, context_length=6, dropout=0.0, num_heads=2)(x)\n"
        "print('sympy' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
