"""Helpers for the causal self-attention course: what the notebooks import.

Split by role, one definition in one place:

- ``helpers.data``: the running example (six tokens and their 3-d embeddings), and the
  seeded layers and padded batch built from it.
- ``helpers.attention``: the reference attention maths, checked against PyTorch:
  ``core`` (scores, weights, scaled dot-product attention), ``masking`` (causal and
  padding masks), ``dropout`` (dropout on attention weights), ``dropout_streams`` (the
  two ways CPU dropout draws its keep mask, older PyTorch releases' and recent ones',
  computed anywhere: notebook 03's optional part shows both), ``modules`` (the attention
  layers as ``nn.Module``), ``demos`` (what notebooks and explorers compute only to show
  a point), ``checked`` (``CheckedModule``: the layers' argument and input checks, kept
  out of the code the notebooks print), ``grouped_query`` (grouped-query and multi-query
  attention: fewer key/value heads).
- ``helpers.gpt``: the tiny GPT of notebooks 08 and 09: ``model``, ``data`` (its
  training text, made on the spot), ``training``, ``generation`` (the KV cache and left-padded
  prompts), ``sampling`` (greedy, temperature, top-k, top-p, drawn from a generator of
  one's own), ``decoding`` (generation with any cache and sampling, and at the context
  length), ``static_cache`` (a KV cache allocated once), ``checks`` (its input checks).
- ``helpers.plotting``: heatmaps of attention weights that return their Figure.
- ``helpers.dataflow``: the data-flow picture drawn at the start of each notebook.
- ``helpers.rendering``: renders a figure changed in place as PNG, blitting what changed.
- ``helpers.widgets``: interactive explorers built on ipywidgets: ``explorer`` (the
  shared ``FigureExplorer``), ``training`` (the tiny GPT's live training monitor and loss
  curves), then one module per notebook's explorer, named in the course's manifest,
  course.toml.
- ``helpers.checks``: exercise checks that name the learner's mistake: ``feedback`` (what
  every check shares), then one module per notebook's exercises, named in course.toml.
- ``helpers.seeding``: seeded draws that leave the learner's random state alone
  (``seeded``).
- ``helpers.threads``: PyTorch on one thread for a moment (``one_thread``).
- ``helpers.validation``: input checks whose errors name the argument, what it got and
  what was expected.

Maintainer tools (the course's manifest, slides, the lecture copy, launch links) are in
``tools``, not here.
"""
