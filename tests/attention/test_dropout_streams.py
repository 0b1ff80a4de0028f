"""intel_keep_mask: the keep mask CPU dropout draws on an Intel CPU, computed anywhere.

Checked here against printouts made on such machines (the reference values below); the
floors package profile (torch 2.5.0, which draws this way on any x86-64 CPU) checks it
against PyTorch's own kernel, entry for entry (.ci/profiles/check_profile.py).
"""

import pytest
import torch

from helpers.attention import intel_keep_mask
from helpers.attention.dropout_streams import draw_32_bits, mcg31_powers
from tests import intel_cpu
from tests.errors import assert_error_names
from tests.reference import causal_example_weights

# After torch.manual_seed(123): nn.Dropout(0.5)(torch.ones(6, 6)) as printed on a machine
# that draws the Intel way (rasbt/LLMs-from-scratch#57, and the course's source material),
# then dropout of the running example's causal weights right after the same seed.
INTEL_ONES_PATTERN = torch.tensor([
    [2., 2., 2., 2., 2., 2.],
    [0., 2., 0., 0., 0., 0.],
    [0., 0., 2., 0., 2., 0.],
    [2., 2., 0., 0., 0., 2.],
    [2., 0., 0., 0., 0., 2.],
    [0., 2., 0., 0., 0., 0.],
])
INTEL_DROPPED_WEIGHTS = torch.tensor([
    [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.8966, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.0000, 0.6206, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4921, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.4350, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.3327, 0.0000, 0.0000, 0.0000, 0.0000],
])


@pytest.fixture
def intel_dropout():
    intel_cpu.install()
    yield
    intel_cpu.uninstall()


def test_reproduces_all_36_entries_of_the_intel_printout():
    torch.manual_seed(123)
    assert torch.equal(intel_keep_mask((6, 6), 0.5) * 2.0, INTEL_ONES_PATTERN)


def test_dropout_drawn_the_intel_way_reproduces_both_printouts(intel_dropout):
    dropout, weights = torch.nn.Dropout(0.5), causal_example_weights()
    torch.manual_seed(123)
    assert torch.equal(dropout(torch.ones(6, 6)), INTEL_ONES_PATTERN)
    torch.manual_seed(123)
    torch.testing.assert_close(dropout(weights), INTEL_DROPPED_WEIGHTS,
                               atol=5e-5, rtol=0)


def test_the_emulation_is_undone_after(intel_dropout):
    intel_cpu.uninstall()
    assert torch.nn.functional.dropout is intel_cpu.ORIGINALS["dropout"]
    assert torch.Tensor.bernoulli_ is intel_cpu.ORIGINALS["bernoulli_"]


@pytest.mark.parametrize("seed", [0, 1, 123, 2**31 + 7])
def test_takes_exactly_one_draw_from_the_generator(seed):
    """As PyTorch's kernel does: afterwards the generator is where one 32-bit draw
    (``random_`` on an int32 tensor) leaves it, so later draws stay in step."""
    for generator in (None, torch.Generator().manual_seed(seed)):
        if generator is None:
            torch.manual_seed(seed)
        reference = torch.Generator().manual_seed(seed)
        intel_keep_mask((3, 5), 0.3, generator=generator)
        torch.empty((), dtype=torch.int32).random_(generator=reference)
        state = torch.get_rng_state() if generator is None else generator.get_state()
        assert torch.equal(state, reference.get_state())


def test_the_32_bit_draw_agrees_with_what_pytorch_shows_of_it():
    """``random_`` on int32 keeps the low 31 bits of the same draw; across 2000 draws
    (the twister refills its 624 words three times) the top bit is set about half the
    time, as it must be for a full 32-bit number."""
    generator, shadow = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    draws = [draw_32_bits(generator) for _ in range(2000)]
    low = [int(torch.empty((), dtype=torch.int32).random_(generator=shadow))
           for _ in range(2000)]
    assert [draw % 2**31 for draw in draws] == low
    top_bits = sum(draw >= 2**31 for draw in draws)
    assert 900 < top_bits < 1100


def test_the_stream_is_mcg31m1():
    powers = mcg31_powers(5)
    assert powers.tolist() == [pow(1132489760, k, 2**31 - 1) for k in range(5)]
    assert mcg31_powers(3000)[2999].item() == pow(1132489760, 2999, 2**31 - 1)


@pytest.mark.parametrize("keep", [0.0, 1.0])
def test_keep_probability_zero_and_one(keep):
    torch.manual_seed(0)
    assert bool(intel_keep_mask((4, 4), keep).all()) == (keep == 1.0)
    assert bool(intel_keep_mask((4, 4), keep).any()) == (keep == 1.0)


def test_keeps_about_the_keep_probability():
    torch.manual_seed(0)
    assert abs(intel_keep_mask((100_000,), 0.3).float().mean().item() - 0.3) < 0.01


def test_bad_probability_is_named():
    assert_error_names(lambda: intel_keep_mask((2, 2), 1.5), ValueError,
                       ["keep_probability", "1.5"])
