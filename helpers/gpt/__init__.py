"""A tiny GPT built on the course's own attention (notebook 08).

Split by role: ``data`` (random letters that repeat, made on the spot, and the best loss
any model can reach on them), ``model`` (``TinyGPT`` and ``generate``), ``training``
(the training loop, the losses as trained and as used, baselines, head scores),
``checks`` (input checks that speak to a learner). It draws nothing: its pictures are
``helpers.widgets.training``'s.

Notebook 09's generation is imported from its modules, not from here: ``generation``
(the KV cache, left-padded batches), ``sampling`` (temperature, top-k, top-p),
``decoding`` (generation with any cache and sampling, and at the context length),
``static_cache`` (a KV cache allocated once).
"""

from helpers.gpt.data import (
    RepeatTask,
    best_possible_loss,
    decode,
    encode,
    make_batch,
)
from helpers.gpt.model import Block, TinyGPT, generate
from helpers.gpt.training import (
    bigram_counts,
    bigram_loss,
    generation_accuracy,
    head_scores,
    induction_score,
    induction_targets,
    next_token_score,
    prefix_logits,
    prefix_loss,
    previous_token_score,
    sequence_loss,
    train,
    training_step,
    uniform_loss,
)

__all__ = [
    "RepeatTask",
    "make_batch",
    "best_possible_loss",
    "encode",
    "decode",
    "Block",
    "TinyGPT",
    "generate",
    "train",
    "training_step",
    "sequence_loss",
    "prefix_logits",
    "prefix_loss",
    "generation_accuracy",
    "uniform_loss",
    "bigram_counts",
    "bigram_loss",
    "previous_token_score",
    "next_token_score",
    "induction_targets",
    "induction_score",
    "head_scores",
]
