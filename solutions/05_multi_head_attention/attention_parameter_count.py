def attention_parameter_count(d_in, d_out, num_heads, qkv_bias):
    """Parameters of a MultiHeadAttention layer, from its sizes."""
    projection = d_in * d_out + (d_out if qkv_bias else 0)  # W_query, W_key, W_value each
    out_proj = d_out * d_out + d_out  # nn.Linear(d_out, d_out) always has a bias
    return 3 * projection + out_proj  # num_heads splits d_out; it adds no weights
