"""Training the tiny GPT, and the numbers that judge it.

- ``train``: the training loop (AdamW on cross-entropy, a fresh batch every step),
  optionally shown live by a monitor, e.g. ``helpers.widgets.training.TrainingMonitor``
  (anything with an ``update(step, loss)`` method; this module draws nothing).
- ``sequence_loss``: the loss as in training, every position in one forward pass.
- ``prefix_loss``: the loss as in use, every next letter predicted from the letters
  before it alone (the model is run on each prefix). A causal model gives the same number
  both ways; a model that peeks at the future does not.
- Baselines a learner can check by hand: ``uniform_loss``, ``bigram_counts`` and
  ``bigram_loss`` (``helpers.gpt.data.best_possible_loss`` is the floor).
- Head scores, computed from attention weights rather than read off a picture:
  ``previous_token_score``, ``next_token_score`` (reading the answer: possible only
  without the mask) and ``induction_score``.

Training and evaluation run on one CPU thread: with two, PyTorch splits some sums
between the threads and adds the parts in another order, and the losses differ from the
second step on (torch 2.13, 2 cores: by up to 0.003 per step over the notebook's 600
steps, measured once). On one thread the weights come out bit for bit the same whatever
thread count the caller set (tests/gpt checks it). Another CPU (another vector instruction
set) may still round differently; the notebook prints trained numbers to two decimals.
"""

import math

import torch
from torch.nn import functional as F

from helpers.gpt.checks import check_token_ids
from helpers.gpt.data import RepeatTask, make_batch
from helpers.gpt.model import generate
from helpers.threads import one_thread
from helpers.validation import check_positive_int, check_positive_number, shape_text


def training_step(model, optimizer, inputs, targets) -> float:
    """One step of gradient descent on the cross-entropy of the next letters: inputs
    and targets (B, T) ids. Returns the loss before the step."""
    logits = model(inputs)  # (B, T, V)
    # logits (B*T, V) against targets (B*T,)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimizer.zero_grad()  # forget the previous step's gradients
    loss.backward()  # the gradient of the loss for every parameter
    optimizer.step()  # move every parameter a little against its gradient
    return loss.item()


def train(model, task: RepeatTask, *, steps: int, batch_size: int = 64, lr: float = 3e-3,
          seed: int = 0, monitor=None) -> list:
    """Train ``model`` for ``steps`` steps (``training_step`` with AdamW at learning rate
    ``lr``) on fresh batches of ``task`` drawn from a generator seeded with ``seed``;
    return the training loss of every step (a list of floats). ``monitor`` (a
    ``TrainingMonitor``) is told every loss as it comes. On one thread (see above)."""
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    check_positive_number(lr, "lr")
    if task.context_length > model.context_length or task.vocab_size > model.vocab_size:
        raise ValueError(f"the task's sequences (context_length={task.context_length}, "
                         f"vocab_size={task.vocab_size}) do not fit the model "
                         f"(context_length={model.context_length}, "
                         f"vocab_size={model.vocab_size})")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    model.train()
    with one_thread():
        for step in range(steps):
            inputs, targets, _ = make_batch(task, batch_size, generator)  # (B, T) each
            losses.append(training_step(model, optimizer, inputs, targets))
            if monitor is not None:
                monitor.update(step + 1, losses[-1])
    model.eval()
    return losses


def check_pairs(model, inputs, targets):
    check_token_ids(inputs, model, name="inputs")
    check_token_ids(targets, model, name="targets")
    if inputs.shape != targets.shape:
        raise ValueError(f"inputs and targets must have the same shape (B, T), got "
                         f"{shape_text(inputs)} and {shape_text(targets)}")


@torch.no_grad()
def sequence_loss(model, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean cross-entropy (nats per letter) with every position predicted in one forward
    pass over the whole sequence, as in training. inputs, targets (B, T) ids."""
    check_pairs(model, inputs, targets)
    with one_thread():
        logits = model(inputs)  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


@torch.no_grad()
def prefix_logits(model, inputs: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) where position t comes from running the model on
    inputs[:, :t+1] alone: what the model predicts for the next letter when the
    letters after it do not exist yet, as when it generates."""
    check_token_ids(inputs, model, name="inputs")
    T = inputs.shape[1]
    with one_thread():
        last = [model(inputs[:, :t + 1])[:, -1] for t in range(T)]  # T times (B, V)
        return torch.stack(last, dim=1)  # (B, T, V)


def prefix_loss(model, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean cross-entropy (nats per letter) with each next letter predicted from the
    letters before it alone (``prefix_logits``). inputs, targets (B, T) ids."""
    check_pairs(model, inputs, targets)
    logits = prefix_logits(model, inputs)  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


def uniform_loss(vocab_size: int) -> float:
    """The loss of always giving every letter the same probability: ln(vocab_size)."""
    return math.log(check_positive_int(vocab_size, "vocab_size"))


def bigram_counts(inputs: torch.Tensor, targets: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """counts[a, b]: how often letter b follows letter a in the pairs inputs -> targets
    (same-shape tensors of ids), plus 1 for every pair so that none has probability 0.
    A (vocab_size, vocab_size) float tensor."""
    check_positive_int(vocab_size, "vocab_size")
    for name, ids in (("inputs", inputs), ("targets", targets)):
        if not isinstance(ids, torch.Tensor) or ids.is_floating_point():
            raise TypeError(f"{name} must be a tensor of token ids, got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError(f"{name} must be ids from 0 to vocab_size - 1 = {vocab_size - 1}")
    if inputs.shape != targets.shape:
        raise ValueError(f"inputs and targets must have the same shape, got "
                         f"{shape_text(inputs)} and {shape_text(targets)}")
    pairs = inputs.flatten() * vocab_size + targets.flatten()  # one number per pair (a, b)
    counts = torch.bincount(pairs, minlength=vocab_size * vocab_size)
    return counts.view(vocab_size, vocab_size).float() + 1.0


def bigram_loss(counts: torch.Tensor, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean cross-entropy of predicting each target from the letter before it alone, with
    probabilities counts[a] / counts[a].sum() (``bigram_counts``)."""
    if not isinstance(counts, torch.Tensor) or counts.ndim != 2 or \
            counts.shape[0] != counts.shape[1]:
        raise ValueError(f"counts must be a square (V, V) tensor from bigram_counts, got "
                         f"{shape_text(counts) if isinstance(counts, torch.Tensor) else counts}")
    probabilities = counts / counts.sum(dim=1, keepdim=True)  # (V, V), rows sum to 1
    return -probabilities[inputs.flatten(), targets.flatten()].log().mean().item()


def check_weights(weights) -> torch.Tensor:
    if not isinstance(weights, torch.Tensor) or weights.ndim < 2 or \
            weights.shape[-1] != weights.shape[-2]:
        got = shape_text(weights) if isinstance(weights, torch.Tensor) else \
            type(weights).__name__
        raise ValueError(f"weights must be attention weights (..., T, T), got {got}")
    return weights


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """How much each query attends to the token just before it: the mean of
    weights[..., i, i - 1] over the queries i = 1 .. T - 1 (1 for a head that always
    looks one back, about 1/i for one that spreads evenly). weights (..., T, T) -> (...)."""
    check_weights(weights)
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)


def next_token_score(weights: torch.Tensor) -> torch.Tensor:
    """How much each query attends to the token just after it, the one it is trained to
    predict: the mean of weights[..., i, i + 1] over the queries i = 0 .. T - 2. Always 0
    under a causal mask. weights (..., T, T) -> (...)."""
    check_weights(weights)
    return weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=-1)


def induction_targets(ids: torch.Tensor) -> torch.Tensor:
    """Boolean (..., T, T): True at (i, j) when key j comes right after an earlier
    occurrence of query i's token (ids[j - 1] == ids[i], j - 1 < i), the place an
    induction head looks at to copy what came next last time. ids (..., T)."""
    T = ids.shape[-1]
    same = ids[..., :, None] == ids[..., None, :]  # (..., T, T): same token at i and j
    earlier = torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)  # j < i
    previous_match = same & earlier  # (..., T, T): ids[j] == ids[i], j < i
    targets = torch.zeros_like(previous_match)
    targets[..., :, 1:] = previous_match[..., :, :-1]  # shifted: the token after j
    return targets


def induction_score(weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """How much attention goes where an induction head looks: for each query whose
    token appeared before, the total weight on the tokens that followed its earlier
    occurrences (``induction_targets``), averaged over those queries. weights
    (..., T, T) of the sequence ids (T,) or (B, T) -> a score per head (...); NaN when
    no token of ids repeats."""
    check_weights(weights)
    if not isinstance(ids, torch.Tensor) or ids.shape[-1] != weights.shape[-1]:
        raise ValueError(f"ids must be the sequence the weights were computed on, with "
                         f"T={weights.shape[-1]} tokens, got "
                         f"{shape_text(ids) if isinstance(ids, torch.Tensor) else ids}")
    targets = induction_targets(ids)  # (T, T) or (B, T, T)
    if ids.ndim == 2:  # (B, T): weights (B, L, H, T, T) or (B, H, T, T)
        targets = targets.view(targets.shape[0], *[1] * (weights.ndim - 3), *targets.shape[1:])
    on_targets = (weights * targets).sum(dim=-1)  # (..., T): weight where induction looks
    has_target = targets.any(dim=-1).expand(on_targets.shape)  # (..., T)
    counted = has_target.sum(dim=-1)  # (...)
    return (on_targets * has_target).sum(dim=-1) / counted


@torch.no_grad()
def head_scores(model, inputs: torch.Tensor) -> dict:
    """Every head's previous-token, next-token and induction scores on the sequences
    ``inputs`` (B, T), averaged over the sequences: {"previous token": (L, H),
    "next token": (L, H), "induction": (L, H)} tensors, layer by layer, head by head."""
    check_token_ids(inputs, model, name="inputs")
    with one_thread():
        _, weights = model(inputs, return_weights=True)  # (B, L, H, T, T)
    return {"previous token": previous_token_score(weights).mean(dim=0),
            "next token": next_token_score(weights).mean(dim=0),
            "induction": induction_score(weights, inputs).mean(dim=0)}


def generation_accuracy(model, inputs: torch.Tensor, prompt_length: int) -> float:
    """Give the model the first ``prompt_length`` letters of each sequence of ``inputs``
    (B, T), let it write the rest (``generate``, one letter at a time), and return the
    fraction of the letters it wrote that match the sequence."""
    check_token_ids(inputs, model, name="inputs")
    T = inputs.shape[1]
    check_positive_int(prompt_length, "prompt_length")
    if prompt_length >= T:
        raise ValueError(f"prompt_length must be smaller than the sequences' T={T}, so "
                         f"that the model has letters to write, got {prompt_length}")
    with one_thread():
        written = generate(model, inputs[:, :prompt_length], T - prompt_length)  # (B, T)
    return (written[:, prompt_length:] == inputs[:, prompt_length:]).float().mean().item()
