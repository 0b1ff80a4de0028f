"""Small models and tasks shared by the tiny-GPT tests: built in a few milliseconds."""

import pytest
import torch

from helpers.gpt.data import RepeatTask
from helpers.gpt.model import TinyGPT

SMALL_TASK = RepeatTask(vocab_size=8, context_length=10, min_period=2, max_period=4)


def small_model(causal=True, seed=0, **sizes):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyGPT(SMALL_TASK.vocab_size, SMALL_TASK.context_length, causal=causal,
                       **{"d_model": 16, "num_heads": 2, "num_layers": 2, **sizes}).eval()


@pytest.fixture
def masked_model():
    return small_model(causal=True)


@pytest.fixture
def unmasked_model():
    return small_model(causal=False)
