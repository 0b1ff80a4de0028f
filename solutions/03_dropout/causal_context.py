from helpers.attention import attention_weights


def causal_context(queries, keys, values, dropout):
    """Causal context vectors (T, d_out), with the nn.Dropout module applied where it belongs."""
    weights = attention_weights(queries, keys, is_causal=True)  # scale, mask, softmax: (T, T)
    weights = dropout(weights)  # on the weights; the module knows if it is training
    return weights @ values  # (T, T) @ (T, d_out) -> (T, d_out)
