"""How CPU dropout draws its keep mask on an Intel CPU (notebook 3, optional part).

``torch.nn.Dropout`` keeps each entry where ``bernoulli_(1 - p)`` drew a 1. PyTorch's CPU
kernel for ``bernoulli_`` with a scalar probability has two ways to draw:

- through Intel's MKL when PyTorch was built with MKL and the CPU's vendor is Intel (so in
  torch 2.11 and 2.13; PyPI's torch 2.5.0 takes this way on AMD CPUs too): one 32-bit
  number from the generator seeds MKL's MCG31m1 stream, and entry n (in row-major order)
  is kept where the n-th number of that stream is below 1 - p;
- otherwise (AMD, Apple silicon, builds without MKL) from the generator's own doubles.

So the same ``torch.manual_seed`` prints two different patterns. ``intel_keep_mask``
computes the first way in plain PyTorch, on any machine.
"""

import torch

from helpers.validation import check_probability

MCG31_MODULUS = 2**31 - 1
MCG31_MULTIPLIER = 1132489760


def intel_keep_mask(shape, keep_probability: float, *, generator=None) -> torch.Tensor:
    """The boolean keep mask that ``torch.empty(shape).bernoulli_(keep_probability)``
    draws through MKL on an Intel CPU. Takes one 32-bit number from ``generator`` (the
    global generator if None), as PyTorch's kernel does, so the generator ends where it
    would."""
    keep_probability = check_probability(keep_probability, "keep_probability")
    shape = tuple(shape)
    seed = draw_32_bits(generator)
    start = seed % MCG31_MODULUS or 1  # MKL's rule: a stream never starts at 0
    stream = start * mcg31_powers(torch.Size(shape).numel()) % MCG31_MODULUS
    uniforms = stream.double() / MCG31_MODULUS
    return (uniforms < keep_probability).reshape(shape)


def mcg31_powers(n: int) -> torch.Tensor:
    """MULTIPLIER**k mod MODULUS for k = 0 .. n-1, as int64 (each product fits in 62 bits),
    doubling the list each round instead of multiplying n times."""
    powers = torch.ones(1, dtype=torch.int64)
    while powers.numel() < n:
        jump = pow(MCG31_MULTIPLIER, powers.numel(), MCG31_MODULUS)
        powers = torch.cat([powers, powers * jump % MCG31_MODULUS])
    return powers[:n]


# The CPU generator's state, as torch.get_rng_state() lays it out: the initial seed
# (8 bytes), then how many of the 624 words are left (4 bytes) and whether it was seeded
# (4), the index of the next word (8), then the 624 words of the Mersenne twister, 8 bytes
# each, little-endian.
_LEFT, _NEXT, _WORDS, _N, _M = 8, 16, 24, 624, 397


def draw_32_bits(generator=None) -> int:
    """The next 32-bit number of a CPU generator's Mersenne twister, all 32 bits (the
    public calls that draw one keep only 31), taking it from the generator. Read from the
    generator's state, then drawn with ``random_()`` so that the generator moves on exactly
    as PyTorch's kernel moves it; the two are checked to agree."""
    state = (torch.get_rng_state() if generator is None else generator.get_state()).tolist()
    left = int.from_bytes(bytes(state[_LEFT:_LEFT + 4]), "little")
    index = int.from_bytes(bytes(state[_NEXT:_NEXT + 8]), "little")
    words = [int.from_bytes(bytes(state[_WORDS + 8 * i:_WORDS + 8 * i + 4]), "little")
             for i in range(_N)]
    if left == 1:  # the twister refills its 624 words before this draw
        words, index = _twist(words), 0
    number = _temper(words[index])
    low_31_bits = int(torch.empty((), dtype=torch.int32).random_(generator=generator))
    if low_31_bits != number % 2**31:
        raise RuntimeError("this PyTorch lays out its generator's state differently; "
                           "intel_keep_mask cannot read it")
    return number


def _twist(words: list) -> list:
    words = list(words)
    for i in range(_N):
        bits = (words[i] & 0x80000000) | (words[(i + 1) % _N] & 0x7FFFFFFF)
        words[i] = words[(i + _M) % _N] ^ (bits >> 1) ^ (0x9908B0DF if bits & 1 else 0)
    return words


def _temper(y: int) -> int:
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return (y ^ (y >> 18)) & 0xFFFFFFFF
