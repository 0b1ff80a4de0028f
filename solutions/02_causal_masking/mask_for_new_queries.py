from helpers.attention import causal_mask


def mask_for_new_queries(T_new, T_total):
    """(T_new, T_total) boolean mask for the last T_new queries over all T_total keys."""
    return causal_mask(T_total)[T_total - T_new:]  # the last T_new rows (none if T_new = 0)
