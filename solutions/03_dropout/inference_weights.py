def inference_weights(weights, p):
    """The weights to use at inference after training with keep-or-drop (unscaled) dropout."""
    return weights * (1 - p)  # in training a weight was kept with probability 1 - p
