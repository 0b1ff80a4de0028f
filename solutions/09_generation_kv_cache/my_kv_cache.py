import torch


class MyKVCache:
    """The keys and values of every token read so far, one pair of tensors per layer."""

    def __init__(self):
        self.keys = []  # keys[layer]: (B, H, T, head_dim)
        self.values = []  # values[layer]: (B, H, T, head_dim)

    def append(self, layer, keys, values):
        """keys, values (B, H, T_new, head_dim) -> the layer's (B, H, T + T_new, head_dim)."""
        if layer == len(self.keys):  # the layer's first tokens
            self.keys.append(keys)
            self.values.append(values)
        else:  # after the cached tokens, on the tokens axis
            self.keys[layer] = torch.cat([self.keys[layer], keys], dim=2)
            self.values[layer] = torch.cat([self.values[layer], values], dim=2)
        return self.keys[layer], self.values[layer]

    def __len__(self):
        """How many tokens are cached: 0 for a new cache."""
        return self.keys[0].shape[2] if self.keys else 0
