"""Helpers for the causal self-attention course.

Split by role, one definition in one place:

- ``helpers.data``: the running example (six tokens and their 3-d embeddings).
- ``helpers.attention``: the reference attention maths, checked against PyTorch.
- ``helpers.plotting``: heatmaps of attention weights that return their Figure.
- ``helpers.rendering``: renders a figure changed in place as PNG, blitting what changed.
- ``helpers.widgets``: interactive explorers built on ipywidgets.
"""
