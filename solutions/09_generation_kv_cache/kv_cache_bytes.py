import torch


def kv_cache_bytes(B, T, num_layers, num_heads, head_dim, dtype):
    """Bytes held by the keys and values of B sequences of T tokens."""
    bytes_per_number = torch.empty(0, dtype=dtype).element_size()  # 4 for float32
    numbers_per_token = 2 * num_layers * num_heads * head_dim  # a key and a value, everywhere
    return B * T * numbers_per_token * bytes_per_number
