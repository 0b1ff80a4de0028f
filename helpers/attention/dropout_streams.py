"""The two ways CPU dropout draws its keep mask (notebook 3, optional part).

``torch.nn.Dropout`` keeps each entry where ``bernoulli_(1 - p)`` drew a 1. PyTorch's CPU
kernel for ``bernoulli_`` with a scalar probability has two ways to draw it, and the
installed build decides which, not the CPU's vendor (both measured on an Intel Xeon and on
an AMD EPYC, with the same result on each):

- through MKL's own stream, in older releases such as PyPI's torch 2.5.0, on any x86-64
  CPU: one 32-bit number from the generator seeds MKL's MCG31m1 stream, and entry n (in
  row-major order) is kept where the n-th number of that stream is below 1 - p.
  ``mkl_keep_mask`` computes this way;
- from the generator's own doubles, in recent releases (torch 2.13 measured; their CPU
  kernel says "Disable MKL rng until #132395 is addressed" for open-source builds): entry
  n is kept where the n-th double the generator draws, the one ``torch.rand(...,
  dtype=torch.float64)`` gives, is below 1 - p. ``generator_keep_mask`` computes this way.
  Builds without MKL (macOS on Apple silicon, ARM) always draw this way.

So one ``torch.manual_seed`` gives two different patterns, one for each way. Both
functions compute their way in plain PyTorch on any machine, whichever way the installed
PyTorch's own dropout draws.
"""

import torch

from helpers.validation import check_probability

MCG31_MODULUS = 2**31 - 1
MCG31_MULTIPLIER = 1132489760


def mkl_keep_mask(shape, keep_probability: float, *, generator=None) -> torch.Tensor:
    """The boolean keep mask, of ``shape``, that ``torch.empty(shape).bernoulli_(
    keep_probability)`` draws through MKL (older releases such as PyPI's torch 2.5.0,
    on any x86-64 CPU). Takes one 32-bit number from ``generator`` (the global generator if
    None), as PyTorch's kernel does, so the generator ends where it would."""
    keep_probability = check_probability(keep_probability, "keep_probability")
    shape = tuple(shape)
    seed = draw_32_bits(generator)
    start = seed % MCG31_MODULUS or 1  # MKL's rule: a stream never starts at 0
    stream = start * mcg31_powers(torch.Size(shape).numel()) % MCG31_MODULUS
    uniforms = stream.double() / MCG31_MODULUS
    return (uniforms < keep_probability).reshape(shape)


def generator_keep_mask(shape, keep_probability: float, *, generator=None) -> torch.Tensor:
    """The boolean keep mask, of ``shape``, that ``torch.empty(shape).bernoulli_(
    keep_probability)`` draws from the generator's own doubles (recent releases, torch 2.13
    measured, on Intel and AMD CPUs alike): one double in [0, 1) per entry, in row-major
    order, kept where it is below ``keep_probability``. Draws them from ``generator`` (the
    global generator if None), so the generator ends where the kernel leaves it."""
    keep_probability = check_probability(keep_probability, "keep_probability")
    doubles = torch.rand(tuple(shape), dtype=torch.float64, generator=generator)
    return doubles < keep_probability


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
                           "mkl_keep_mask cannot read it")
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
