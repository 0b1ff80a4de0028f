"""Helpers for the causal self-attention course: what the notebooks import.

Split by role, one definition in one place:

- ``helpers.data``: the running example (six tokens and their 3-d embeddings), and the
  seeded layers and padded batch built from it.
- ``helpers.attention``: the reference attention maths, checked against PyTorch:
  ``core`` (scores, weights, scaled dot-product attention), ``masking`` (causal and
  padding masks), ``dropout`` (dropout on attention weights), ``dropout_streams`` (the
  keep mask CPU dropout draws on an Intel CPU, computed anywhere), ``modules`` (the
  attention layers as ``nn.Module``), ``checked`` (``CheckedModule``: the layers'
  argument and input checks, kept out of the code the notebooks print).
- ``helpers.gpt``: the tiny GPT of notebooks 07 and 08: ``model``, ``data`` (its
  training text, made on the spot), ``training``, ``generation`` (the KV cache and left-padded
  prompts), ``checks`` (its input checks).
- ``helpers.plotting``: heatmaps of attention weights that return their Figure.
- ``helpers.dataflow``: the data-flow picture drawn at the start of each notebook.
- ``helpers.rendering``: renders a figure changed in place as PNG, blitting what changed.
- ``helpers.widgets``: interactive explorers built on ipywidgets: ``explorer`` (the
  shared ``FigureExplorer``), then one module per notebook: ``self_attention``,
  ``causal_masking``, ``dropout``, ``causal_attention``, ``multi_head``, ``padding``,
  ``heads``, ``generation``.
- ``helpers.checks``: exercise checks that name the learner's mistake: ``feedback`` (what
  every check shares), then one module per notebook: ``self_attention``,
  ``causal_masking``, ``dropout``, ``causal_attention``, ``multi_head``, ``padding``,
  ``tiny_gpt``, ``generation``.
- ``helpers.seeding``: seeded draws that leave the learner's random state alone
  (``seeded``).
- ``helpers.threads``: PyTorch on one thread for a moment (``one_thread``).
- ``helpers.validation``: input checks whose errors name the argument, what it got and
  what was expected.

Maintainer tools (slides, the lecture copy, launch links) are in ``tools``, not here.
"""
