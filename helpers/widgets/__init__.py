"""Interactive explorers built on ipywidgets.

Each explorer is a ``FigureExplorer``: a row of controls above one matplotlib figure,
in two parts. A pure function computes a *view* from the controls' values (what the
picture shows: arrays, labels, captions), tested without any figure; a *drawing* builds
the figure once and, given a view, changes its artists in place. The figure is then
rendered into an ``ipywidgets.Image`` (``helpers.rendering``). The maths behind each
view is the reference maths of ``helpers.attention``; what only an explorer computes (its
demonstrations, such as ``projected_attention_weights``, which notebook 01 also uses)
lives in the explorer's module.

Factories return the widget; they never call ``display``. In a notebook, leave the widget
as the last expression of a cell.
"""

from helpers.widgets.causal_attention import (
    causal_attention_explorer,
)
from helpers.widgets.causal_masking import (
    MASKING_STRATEGIES,
    OUTSIDE_COLOUR,
    causal_masking_explorer,
)
from helpers.widgets.dropout import (
    DROPOUT_SAMPLE_COUNTS,
    dropout_explorer,
)
from helpers.widgets.explorer import (
    CONTROL_LAYOUT,
    CONTROL_STYLE,
    EXPLORER_CLASS,
    EXPLORER_CSS,
    FigureExplorer,
)
from helpers.widgets.generation import (
    generation_explorer,
)
from helpers.widgets.heads import (
    heads_explorer,
)
from helpers.widgets.multi_head import (
    SEQUENCE_ORDERS,
    multi_head_explorer,
)
from helpers.widgets.padding import (
    FULLY_MASKED_CHOICES,
    padding_explorer,
)
from helpers.widgets.self_attention import (
    projected_attention_weights,
    self_attention_explorer,
)

# Every explorer factory, in course order (tests and benchmarks go through them all).
EXPLORERS = {
    "self_attention_explorer": self_attention_explorer,
    "causal_masking_explorer": causal_masking_explorer,
    "dropout_explorer": dropout_explorer,
    "causal_attention_explorer": causal_attention_explorer,
    "multi_head_explorer": multi_head_explorer,
    "padding_explorer": padding_explorer,
    "heads_explorer": heads_explorer,
    "generation_explorer": generation_explorer,
}

__all__ = [
    "FigureExplorer",
    "CONTROL_STYLE",
    "CONTROL_LAYOUT",
    "EXPLORER_CLASS",
    "EXPLORER_CSS",
    "self_attention_explorer",
    "projected_attention_weights",
    "causal_masking_explorer",
    "MASKING_STRATEGIES",
    "OUTSIDE_COLOUR",
    "dropout_explorer",
    "DROPOUT_SAMPLE_COUNTS",
    "causal_attention_explorer",
    "multi_head_explorer",
    "SEQUENCE_ORDERS",
    "padding_explorer",
    "FULLY_MASKED_CHOICES",
    "heads_explorer",
    "generation_explorer",
    "EXPLORERS",
]
