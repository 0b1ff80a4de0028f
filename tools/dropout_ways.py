"""Which of the two ways the installed PyTorch's CPU dropout draws its keep mask, checked
entry for entry against the course's function for each way
(helpers/attention/dropout_streams.py). Shared by the unit tests and the package profiles
(.ci/profiles/check_profile.py), which run it on other PyTorch releases."""

import torch

from helpers.attention.dropout_streams import generator_keep_mask, mkl_keep_mask

WAYS = {"through MKL": mkl_keep_mask, "from the generator": generator_keep_mask}


def draws_alike(keep_mask, seed: int, shape, keep: float, use_generator: bool) -> bool:
    """Whether PyTorch's own ``bernoulli_(keep)`` and ``keep_mask`` give the same mask and
    leave the generator (seeded ``seed``; the global one unless ``use_generator``) in the
    same state."""
    draws = []
    for draw in (lambda g: torch.empty(shape).bernoulli_(keep, generator=g).bool(),
                 lambda g: keep_mask(shape, keep, generator=g)):
        generator = torch.Generator().manual_seed(seed) if use_generator else None
        if generator is None:
            torch.manual_seed(seed)
        mask = draw(generator)
        draws.append((mask, torch.get_rng_state() if generator is None else generator.get_state()))
    (real, real_state), (ours, our_state) = draws
    return torch.equal(real, ours) and torch.equal(real_state, our_state)


def installed_ways() -> list:
    """The names (keys of WAYS) of the ways whose function gives the installed PyTorch's
    draw after ``torch.manual_seed(123)`` on a 6 x 6 tensor: one, if all is well."""
    return [name for name, keep_mask in WAYS.items()
            if draws_alike(keep_mask, 123, (6, 6), 0.5, False)]
