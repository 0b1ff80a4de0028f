"""Small models and tasks shared by the tiny-GPT tests (and the heads explorer's): built in
a few milliseconds."""

import torch

from helpers.gpt.data import RepeatTask
from helpers.gpt.model import TinyGPT

SMALL_TASK = RepeatTask(vocab_size=8, context_length=10, min_period=2, max_period=4)


def small_model(causal=True, seed=0, **sizes):
    """A TinyGPT for SMALL_TASK built at ``seed`` (the global random state is left as it
    was), two layers of two heads, d_model 16 unless ``sizes`` says otherwise, in eval
    mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyGPT(SMALL_TASK.vocab_size, SMALL_TASK.context_length, causal=causal,
                       **{"d_model": 16, "num_heads": 2, "num_layers": 2, **sizes}).eval()
