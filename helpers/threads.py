"""PyTorch on one thread for a moment: ``with one_thread(): ...``.

Two reasons to use it, both measured in this course:

- explorers compute on tiny tensors, where waking a second thread costs more than the
  work: on a busy or CPU-capped machine (Binder), 10 to 300 ms instead of under 1 ms per
  update;
- training (notebook 08) gives the same numbers whatever thread count the learner's
  machine uses: with two threads PyTorch splits some sums (LayerNorm's gradients among
  them) and adds the parts in another order.
"""

from contextlib import contextmanager

import torch


@contextmanager
def one_thread():
    """Run PyTorch on one thread inside the ``with`` block, then as before."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
