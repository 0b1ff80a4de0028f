"""A tiny decoder-only GPT built on the course's own MultiHeadAttention (notebook 05).

Letters used throughout: B batch, T tokens, V vocabulary size, d_model the width of
every token's vector, H heads, L layers.

    token ids (B, T)
      -> token embedding + position embedding            (B, T, d_model)
      -> L blocks, each:  x + attention(norm(x))           (B, T, d_model)
                          x + mlp(norm(x))                 (B, T, d_model)
      -> final norm -> language-model head                 (B, T, V): a score per letter

``causal=False`` builds the same model with the causal mask switched off: every token may
attend to every other, the future included.
"""

import torch
from torch import nn

from helpers.attention import MultiHeadAttention
from helpers.attention.checked import CheckedModule
from helpers.gpt.checks import check_token_ids
from helpers.validation import check_positive_int


class Block(nn.Module):
    """Attention, then a small MLP, each reading a normalised copy of x and adding its
    result back (a residual connection). x (B, T, d_model) -> (B, T, d_model)."""

    def __init__(self, d_model: int, num_heads: int, context_length: int, causal: bool = True):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attention = MultiHeadAttention(d_model, d_model, context_length, dropout=0.0,
                                            num_heads=num_heads)
        if not causal:
            # The mask is a buffer of the module (notebook 04): all True lets every
            # query attend to every key, the future included.
            self.attention.causal_mask.fill_(True)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),  # (B, T, 4 * d_model)
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),  # (B, T, d_model)
        )

    def forward(self, x: torch.Tensor, return_weights: bool = False):
        context, weights = self.attention(self.norm1(x), return_weights=True)
        x = x + context  # (B, T, d_model); weights (B, H, T, T)
        x = x + self.mlp(self.norm2(x))  # (B, T, d_model)
        return (x, weights) if return_weights else x


class TinyGPT(CheckedModule):
    """Token ids (B, T) -> logits (B, T, V): at every position, a score for each letter
    of the vocabulary being the *next* one. T is at most ``context_length``. Arguments and
    token ids are checked apart (``check_arguments``, ``check_input``): a clear message,
    not an IndexError from inside an embedding."""

    def __init__(self, vocab_size: int, context_length: int, d_model: int = 32,
                 num_heads: int = 2, num_layers: int = 2, causal: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.context_length = context_length
        self.causal = causal
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(context_length, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, num_heads, context_length, causal) for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, ids: torch.Tensor, return_weights: bool = False):
        B, T = ids.shape  # batch, tokens
        positions = torch.arange(T, device=ids.device)  # (T,)
        x = self.token_embedding(ids)  # (B, T, d_model)
        x = x + self.position_embedding(positions)  # (T, d_model) broadcast over B
        weights_per_layer = []
        for block in self.blocks:
            x, weights = block(x, return_weights=True)  # weights (B, H, T, T)
            weights_per_layer.append(weights)
        logits = self.lm_head(self.final_norm(x))  # (B, T, V)
        if return_weights:
            return logits, torch.stack(weights_per_layer, dim=1)  # (B, L, H, T, T)
        return logits

    @staticmethod
    def check_arguments(vocab_size, context_length, d_model, num_heads, num_layers,
                        causal) -> None:
        for value, name in [(vocab_size, "vocab_size"), (context_length, "context_length"),
                            (d_model, "d_model"), (num_heads, "num_heads"),
                            (num_layers, "num_layers")]:
            check_positive_int(value, name)

    def check_input(self, ids, return_weights=False) -> None:
        check_token_ids(ids, self)


@torch.no_grad()
def generate(model: TinyGPT, ids: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Continue ``ids`` (B, T) by ``new_tokens`` letters, one at a time, each the model's
    most likely next letter given only the letters before it. Returns (B, T + new_tokens).
    The model sees at most its last ``context_length`` letters."""
    check_positive_int(new_tokens, "new_tokens")
    check_token_ids(ids, model, any_length=True)
    for _ in range(new_tokens):
        context = ids[:, -model.context_length:]  # (B, <= context_length)
        logits = model(context)  # (B, T, V)
        next_id = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1): the likeliest letter
        ids = torch.cat([ids, next_id], dim=1)  # (B, T + 1)
    return ids
