"""Make this process's CPU dropout draw as PyTorch draws it on an Intel CPU.

Recent PyTorch releases draw dropout's keep mask through Intel's MKL only when the CPU's
vendor is Intel (see helpers/attention/dropout_streams.py); this machine's CPU may not be
one. ``install()`` replaces ``torch.nn.functional.dropout`` (which ``nn.Dropout`` and
``nn.MultiheadAttention`` call) and ``Tensor.bernoulli_`` with a scalar probability by
versions that draw the Intel way, on CPU tensors; ``uninstall()`` puts the originals back.
A notebook run with them installed runs as on an Intel CPU, as far as dropout goes.

Standalone on purpose: a notebook's kernel loads this file by its path.
"""

import torch
import torch.nn.functional as F

from helpers.attention.dropout_streams import intel_keep_mask

ORIGINALS = {"dropout": F.dropout, "bernoulli_": torch.Tensor.bernoulli_}


def intel_dropout(input, p=0.5, training=True, inplace=False):
    if not input.is_cpu or not training or p == 0.0 or p == 1.0:
        return ORIGINALS["dropout"](input, p, training, inplace)  # draws nothing
    noise = intel_keep_mask(input.shape, 1 - p).to(input.dtype).div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def intel_bernoulli_(self, p=0.5, *, generator=None):
    if not self.is_cpu or isinstance(p, torch.Tensor):
        return ORIGINALS["bernoulli_"](self, p, generator=generator)
    with torch.no_grad():
        return self.copy_(intel_keep_mask(self.shape, p, generator=generator))


def install():
    F.dropout = intel_dropout
    torch.Tensor.bernoulli_ = intel_bernoulli_


def uninstall():
    F.dropout = ORIGINALS["dropout"]
    torch.Tensor.bernoulli_ = ORIGINALS["bernoulli_"]
