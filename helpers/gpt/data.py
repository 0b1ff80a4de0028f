"""The tiny GPT's data, made on the spot (nothing downloaded): repeated random letters.

Each sequence is a *segment* of ``P`` different letters drawn at random (``P``, the
period), repeated until the sequence is full, e.g. with P = 5::

    q d k a m q d k a m q d k a m q ...

Why this data: the first copy of the segment is pure chance, so no model can predict it
better than by guessing among the letters not used yet; once the segment starts again,
every next letter is written earlier in the sequence, one place after the previous
occurrence of the current letter. Only a model that *looks back* with attention can use
that (counting which letter follows which, a bigram model, cannot: the letters are
random), and the way it looks back is a known pair of heads, a previous-token head and an
induction head. And the best possible loss is known exactly (``best_possible_loss``), so
a model whose loss falls below it has read answers it should not see.

The period ``P`` is drawn anew for every sequence (between ``min_period`` and
``max_period``), so that "look back P places" is not a fixed jump a model could learn
from positions alone: it has to find the earlier letter by what it is.

Letters are token ids 0 .. vocab_size - 1, written as "a", "b", ... (``decode``).
"""

import math
import string
from dataclasses import dataclass

import torch

from helpers.validation import check_positive_int, shape_text

LETTERS = string.ascii_lowercase


@dataclass(frozen=True)
class RepeatTask:
    """The shape of the data: ``vocab_size`` letters, sequences of ``context_length``
    inputs (and as many targets, the inputs shifted by one), segments of
    ``min_period`` to ``max_period`` different letters."""

    vocab_size: int = 16
    context_length: int = 24
    min_period: int = 3
    max_period: int = 8

    def __post_init__(self):
        check_positive_int(self.vocab_size, "vocab_size")
        check_positive_int(self.context_length, "context_length")
        check_positive_int(self.min_period, "min_period")
        check_positive_int(self.max_period, "max_period")
        if self.vocab_size > len(LETTERS):
            raise ValueError(f"vocab_size must be at most {len(LETTERS)} (one letter per "
                             f"token), got {self.vocab_size}")
        if not 2 <= self.min_period <= self.max_period:
            raise ValueError(f"min_period must be at least 2 and at most max_period, got "
                             f"min_period={self.min_period}, max_period={self.max_period}")
        if self.max_period > self.vocab_size:
            raise ValueError(f"max_period must be at most vocab_size={self.vocab_size} (a "
                             f"segment uses different letters), got {self.max_period}")
        if self.max_period >= self.context_length:
            raise ValueError(f"max_period must be smaller than context_length="
                             f"{self.context_length} so that every sequence repeats, got "
                             f"{self.max_period}")


def make_batch(task: RepeatTask, batch_size: int, generator: torch.Generator):
    """``batch_size`` sequences of ``task``, drawn from ``generator``.

    Returns ``(inputs, targets, periods)``: inputs (B, T) and targets (B, T) token ids
    (int64), targets being the inputs shifted one place left (the next letter after each
    input), and periods (B,) the segment length of each sequence.
    """
    check_positive_int(batch_size, "batch_size")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (e.g. "
                        f"torch.Generator().manual_seed(0)), got {type(generator).__name__}")
    B, T, V = batch_size, task.context_length, task.vocab_size
    periods = torch.randint(task.min_period, task.max_period + 1, (B,), generator=generator)
    # A random order of the V letters per sequence; its first P are the segment.
    letters = torch.rand(B, V, generator=generator).argsort(dim=1)  # (B, V)
    positions = torch.arange(T + 1)  # (T + 1,)
    in_segment = positions[None, :] % periods[:, None]  # (B, T + 1): place in the segment
    sequences = letters.gather(1, in_segment)  # (B, T + 1)
    return sequences[:, :-1], sequences[:, 1:], periods


def encode(text: str) -> torch.Tensor:
    """Letters to token ids ("a" -> 0, "b" -> 1, ...), shape (len(text),); spaces are
    ignored, so that "abc abc" and "abcabc" are the same sequence."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string of letters, got {type(text).__name__}")
    letters = text.replace(" ", "")
    unknown = sorted(set(letters) - set(LETTERS))
    if unknown:
        raise ValueError(f"text may hold only the lowercase letters a-z (and spaces), got "
                         f"{''.join(unknown)!r} in {text!r}")
    if not letters:
        raise ValueError("text must hold at least one letter, got an empty string")
    return torch.tensor([LETTERS.index(letter) for letter in letters])


def decode(ids) -> str:
    """Token ids (a 1-d tensor or a list) to letters, e.g. [0, 1, 2] -> "abc"."""
    if isinstance(ids, torch.Tensor):
        if ids.ndim != 1:
            raise ValueError(f"ids must be one sequence (1 dimension), got shape "
                             f"{shape_text(ids)}")
        ids = ids.tolist()
    bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < len(LETTERS))]
    if bad:
        raise ValueError(f"ids must be whole numbers from 0 to {len(LETTERS) - 1}, got {bad[0]}")
    return "".join(LETTERS[i] for i in ids)


def best_possible_loss(task: RepeatTask, *, period: int = None) -> float:
    """The lowest average loss (nats per token) that any model which does not see the
    answer can reach on ``task``: the entropy of the next letter given all before it.

    Before the segment repeats, the next letter is either the start of the repeat (if the
    segment ends here: the chance that P equals the number of letters so far, among the
    periods still possible) or one of the letters not used yet, each as likely. Once the
    repeat has begun, the next letter is certain: loss 0. Averaged over every target
    position and every period P (all equally likely); with ``period``, over the target
    positions of a sequence of that period alone (the model still does not know P).
    """
    V, T = task.vocab_size, task.context_length
    periods = range(task.min_period, task.max_period + 1)
    if period is not None and (isinstance(period, bool) or period not in periods):
        raise ValueError(f"period must be one of the task's periods, {task.min_period} to "
                         f"{task.max_period}, got {period!r}")
    total = 0.0
    for P in periods if period is None else [period]:
        for t in range(T):  # the target is letter t + 1; letters 0..t are seen
            seen = t + 1
            if seen > P:
                continue  # repeating: certain
            # chance that the segment ends after `seen` letters, given it has not ended yet
            still_possible = [p for p in periods if p >= seen]
            ends_here = (seen in still_possible) / len(still_possible)
            if seen == P:
                total += -math.log(ends_here)
            else:
                total += -math.log((1.0 - ends_here) / (V - seen))
    return total / ((len(periods) if period is None else 1) * T)
