"""mkl_keep_mask and generator_keep_mask: the two ways CPU dropout draws its keep mask.

The PyTorch release decides which way its dropout draws, not the CPU: PyPI's torch 2.5.0
through MKL, torch 2.13 from the generator's own doubles, on Intel and AMD CPUs alike.
Both are checked here against printouts of each way (the reference values below), and the
way the installed PyTorch draws is checked against its own kernel, entry for entry; the
floors package profile (torch 2.5.0) checks the MKL way against its kernel too
(.ci/profiles/check_profile.py).
"""

import pytest
import torch

from helpers.attention import generator_keep_mask, mkl_keep_mask
from helpers.attention.dropout_streams import draw_32_bits, mcg31_powers
from tests.errors import assert_error_names
from tests.reference import causal_example_weights
from tools.dropout_ways import WAYS, draws_alike, installed_ways

# After torch.manual_seed(123): nn.Dropout(0.5)(torch.ones(6, 6)) as printed by a PyTorch
# that draws through MKL (torch 2.5.0 from PyPI; a reader in rasbt/LLMs-from-scratch#57),
# then dropout of the running example's causal weights right after the same seed.
MKL_ONES_PATTERN = torch.tensor([
    [2., 2., 2., 2., 2., 2.],
    [0., 2., 0., 0., 0., 0.],
    [0., 0., 2., 0., 2., 0.],
    [2., 2., 0., 0., 0., 2.],
    [2., 0., 0., 0., 0., 2.],
    [0., 2., 0., 0., 0., 0.],
])
MKL_DROPPED_WEIGHTS = torch.tensor([
    [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.8966, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.0000, 0.6206, 0.0000, 0.0000, 0.0000],
    [0.5517, 0.4921, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.4350, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.3327, 0.0000, 0.0000, 0.0000, 0.0000],
])
# The same two lines as printed by a PyTorch that draws from the generator's own doubles
# (torch 2.13; the pattern of chapter 3 of Raschka's book).
GENERATOR_ONES_PATTERN = torch.tensor([
    [2., 2., 0., 2., 2., 0.],
    [0., 0., 0., 2., 0., 2.],
    [2., 2., 2., 2., 0., 2.],
    [0., 2., 2., 0., 0., 2.],
    [0., 2., 0., 2., 0., 2.],
    [0., 2., 2., 2., 2., 0.],
])
GENERATOR_DROPPED_WEIGHTS = torch.tensor([
    [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
    [0.7599, 0.6194, 0.6206, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.4921, 0.4925, 0.0000, 0.0000, 0.0000],
    [0.0000, 0.3966, 0.0000, 0.3775, 0.0000, 0.0000],
    [0.0000, 0.3327, 0.3331, 0.3084, 0.3331, 0.0000],
])
PRINTOUTS = {"mkl": (mkl_keep_mask, MKL_ONES_PATTERN, MKL_DROPPED_WEIGHTS),
             "generator": (generator_keep_mask, GENERATOR_ONES_PATTERN,
                           GENERATOR_DROPPED_WEIGHTS)}


@pytest.mark.parametrize("way", PRINTOUTS)
def test_reproduces_both_printouts_of_its_way(way):
    keep_mask, ones_pattern, dropped_weights = PRINTOUTS[way]
    torch.manual_seed(123)
    assert torch.equal(keep_mask((6, 6), 0.5) * 2.0, ones_pattern)
    weights = causal_example_weights()
    torch.manual_seed(123)
    dropped = torch.where(keep_mask((6, 6), 0.5), weights * 2.0, 0.0)
    torch.testing.assert_close(dropped, dropped_weights, atol=5e-5, rtol=0)


def test_the_two_ways_give_different_patterns():
    assert int((MKL_ONES_PATTERN == GENERATOR_ONES_PATTERN).sum()) == 18


def test_the_installed_pytorch_draws_one_of_the_two_ways_entry_for_entry():
    """Which way is the release's business; whichever it is, its function must give the
    same masks and leave the generator in the same state, over varied draws."""
    ways = installed_ways()
    assert len(ways) == 1, f"torch {torch.__version__} draws neither way (or both): {ways}"
    keep_mask = WAYS[ways[0]]
    cases = [(seed, shape, keep, use_generator)
             for seed in (0, 2**31 + 7) for shape in ((1,), (2, 3, 7), (3, 1601))
             for keep in (0.1, 2 / 3) for use_generator in (False, True)]
    assert [case for case in cases if not draws_alike(keep_mask, *case)] == []


@pytest.mark.parametrize("seed", [0, 1, 123, 2**31 + 7])
def test_the_mkl_way_takes_exactly_one_draw_from_the_generator(seed):
    """As PyTorch's kernel does: afterwards the generator is where one 32-bit draw
    (``random_`` on an int32 tensor) leaves it, so later draws stay in step."""
    for generator in (None, torch.Generator().manual_seed(seed)):
        if generator is None:
            torch.manual_seed(seed)
        reference = torch.Generator().manual_seed(seed)
        mkl_keep_mask((3, 5), 0.3, generator=generator)
        torch.empty((), dtype=torch.int32).random_(generator=reference)
        state = torch.get_rng_state() if generator is None else generator.get_state()
        assert torch.equal(state, reference.get_state())


def test_the_generator_way_takes_one_double_an_entry():
    generator, reference = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    generator_keep_mask((3, 5), 0.3, generator=generator)
    torch.empty(15, dtype=torch.float64).uniform_(generator=reference)
    assert torch.equal(generator.get_state(), reference.get_state())


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


@pytest.mark.parametrize("way", PRINTOUTS)
@pytest.mark.parametrize("keep", [0.0, 1.0])
def test_keep_probability_zero_and_one(way, keep):
    keep_mask = PRINTOUTS[way][0]
    torch.manual_seed(0)
    assert bool(keep_mask((4, 4), keep).all()) == (keep == 1.0)
    assert bool(keep_mask((4, 4), keep).any()) == (keep == 1.0)


@pytest.mark.parametrize("way", PRINTOUTS)
def test_keeps_about_the_keep_probability(way):
    torch.manual_seed(0)
    kept = PRINTOUTS[way][0]((100_000,), 0.3)
    assert kept.dtype == torch.bool and kept.shape == (100_000,)
    assert abs(kept.float().mean().item() - 0.3) < 0.01


@pytest.mark.parametrize("way", PRINTOUTS)
def test_bad_probability_is_named(way):
    assert_error_names(lambda: PRINTOUTS[way][0]((2, 2), 1.5), ValueError,
                       ["keep_probability", "1.5"])
