"""Exercise checks: is the learner's answer right, and if not, what is the likely mistake?

A notebook's check cell is one call, ``check_blocked_positions(blocked_positions)``: the
check runs the learner's function (or class) on inputs of its own, at sizes unlike the
notebook's, and returns a ``Feedback`` shown as ``Correct: ...``, ``Not attempted yet: ...``
while the stub still raises ``NotImplementedError``, or ``Incorrect: ...`` naming the
mistake it recognised. Help comes in levels: ``check_blocked_positions.hint()`` nudges
further, and the exercise's ``%load`` line holds the solution. A check never raises, never
shows the expected tensor or the fix line, never changes the learner's tensors or modules,
and gives the global random generator back its state.

Split by role: ``feedback`` (``Feedback`` and the comparison machinery every check
shares), then one module per notebook, named as in ``helpers.widgets``. ``EXERCISES``
lists every exercise with its check and its solution file under ``solutions/``.
"""

from dataclasses import dataclass

from helpers.checks.causal_attention import check_buffer, check_causal_attention_forward
from helpers.checks.causal_masking import (
    check_blocked_positions,
    check_mask_for_new_queries,
    check_masked_softmax,
)
from helpers.checks.dropout import check_causal_context, check_inference_weights, check_my_dropout
from helpers.checks.feedback import CORRECT, INCORRECT, NOT_ATTEMPTED, Check, Feedback, Hint
from helpers.checks.generation import (
    check_attend_over_cache,
    check_kv_cache_bytes,
    check_next_position_ids,
)
from helpers.checks.multi_head import check_merge_heads, check_parameter_count, check_split_heads
from helpers.checks.padding import (
    check_causal_padding_mask,
    check_masked_loss,
    check_padded_multi_head_attention,
    check_safe_masked_softmax,
)
from helpers.checks.self_attention import (
    check_batched_self_attention_weights,
    check_self_attention_weights,
    check_stable_softmax,
)
from helpers.checks.tiny_gpt import (
    check_block_forward,
    check_next_token_loss,
    check_previous_token_score,
)


@dataclass(frozen=True)
class Exercise:
    """One exercise: its notebook, the name the learner completes, its check, its solution."""

    notebook: str  # the notebook's file name without .ipynb
    answer: str  # the function or class the learner completes, as named in the notebook
    check: Check
    solution: str  # the solution's file name in solutions/<notebook>/

    @property
    def solution_path(self) -> str:
        """The solution file, relative to the repository root."""
        return f"solutions/{self.notebook}/{self.solution}"

    @property
    def load_line(self) -> str:
        """What a learner types in a notebook (notebooks/ is the working directory)."""
        return f"%load ../{self.solution_path}"


EXERCISES = (
    Exercise("01_self_attention", "stable_softmax", check_stable_softmax, "stable_softmax.py"),
    Exercise("01_self_attention", "self_attention_weights", check_self_attention_weights,
             "self_attention_weights.py"),
    Exercise("01_self_attention", "batched_self_attention_weights",
             check_batched_self_attention_weights, "batched_self_attention_weights.py"),
    Exercise("02_causal_masking", "blocked_positions", check_blocked_positions,
             "blocked_positions.py"),
    Exercise("02_causal_masking", "masked_softmax", check_masked_softmax, "masked_softmax.py"),
    Exercise("02_causal_masking", "mask_for_new_queries", check_mask_for_new_queries,
             "mask_for_new_queries.py"),
    Exercise("03_dropout", "my_dropout", check_my_dropout, "my_dropout.py"),
    Exercise("03_dropout", "inference_weights", check_inference_weights,
             "inference_weights.py"),
    Exercise("03_dropout", "causal_context", check_causal_context, "causal_context.py"),
    Exercise("04_causal_attention_class", "MyCausalAttention",
             check_causal_attention_forward, "my_causal_attention.py"),
    Exercise("04_causal_attention_class", "Scaler", check_buffer, "scaler.py"),
    Exercise("05_multi_head_attention", "split_heads", check_split_heads, "split_heads.py"),
    Exercise("05_multi_head_attention", "merge_heads", check_merge_heads, "merge_heads.py"),
    Exercise("05_multi_head_attention", "attention_parameter_count", check_parameter_count,
             "attention_parameter_count.py"),
    Exercise("06_padding_masks", "combined_mask", check_causal_padding_mask,
             "combined_mask.py"),
    Exercise("06_padding_masks", "safe_masked_softmax", check_safe_masked_softmax,
             "safe_masked_softmax.py"),
    Exercise("06_padding_masks", "masked_loss", check_masked_loss, "masked_loss.py"),
    Exercise("06_padding_masks", "MyMultiHeadAttention", check_padded_multi_head_attention,
             "my_multi_head_attention.py"),
    Exercise("07_tiny_gpt", "my_previous_token_score", check_previous_token_score,
             "my_previous_token_score.py"),
    Exercise("07_tiny_gpt", "next_token_loss", check_next_token_loss, "next_token_loss.py"),
    Exercise("07_tiny_gpt", "MyBlock", check_block_forward, "my_block.py"),
    Exercise("08_generation_kv_cache", "kv_cache_bytes", check_kv_cache_bytes,
             "kv_cache_bytes.py"),
    Exercise("08_generation_kv_cache", "attend_over_cache", check_attend_over_cache,
             "attend_over_cache.py"),
    Exercise("08_generation_kv_cache", "next_position_ids", check_next_position_ids,
             "next_position_ids.py"),
)

__all__ = [
    "Feedback",
    "Hint",
    "Check",
    "CORRECT",
    "NOT_ATTEMPTED",
    "INCORRECT",
    "Exercise",
    "EXERCISES",
    "check_stable_softmax",
    "check_self_attention_weights",
    "check_batched_self_attention_weights",
    "check_blocked_positions",
    "check_masked_softmax",
    "check_mask_for_new_queries",
    "check_my_dropout",
    "check_inference_weights",
    "check_causal_context",
    "check_causal_attention_forward",
    "check_buffer",
    "check_split_heads",
    "check_merge_heads",
    "check_parameter_count",
    "check_causal_padding_mask",
    "check_safe_masked_softmax",
    "check_masked_loss",
    "check_padded_multi_head_attention",
    "check_previous_token_score",
    "check_next_token_loss",
    "check_block_forward",
    "check_kv_cache_bytes",
    "check_attend_over_cache",
    "check_next_position_ids",
]
