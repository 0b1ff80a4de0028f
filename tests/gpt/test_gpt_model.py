"""The tiny GPT: shapes, the causal switch, generation and the errors a learner sees."""

import pytest
import torch

from helpers.attention import MultiHeadAttention
from helpers.gpt.model import TinyGPT, generate
from tests.gpt.support import SMALL_TASK, small_model

V, T_MAX = SMALL_TASK.vocab_size, SMALL_TASK.context_length


def random_ids(B, T, seed=0):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("T", [1, 5, T_MAX])
def test_shapes_of_logits_and_weights(masked_model, T):
    ids = random_ids(3, T)
    logits = masked_model(ids)
    assert logits.shape == (3, T, V)
    logits_again, weights = masked_model(ids, return_weights=True)
    assert weights.shape == (3, 2, 2, T, T)  # (B, L, H, T, T)
    torch.testing.assert_close(logits_again, logits)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(3, 2, 2, T))


def test_blocks_are_the_course_multi_head_attention(masked_model):
    assert all(isinstance(block.attention, MultiHeadAttention) for block in masked_model.blocks)


def test_masked_and_unmasked_models_start_from_the_same_weights(masked_model, unmasked_model):
    for (name, a), (_, b) in zip(masked_model.state_dict().items(),
                                 unmasked_model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("changed", [2, 6])
def test_a_later_token_changes_earlier_predictions_only_without_the_mask(
        masked_model, unmasked_model, changed):
    ids = random_ids(2, T_MAX, seed=1)
    other = ids.clone()
    other[:, changed] = (other[:, changed] + 1) % V
    for model, leaks in ((masked_model, False), (unmasked_model, True)):
        before, after = model(ids)[:, :changed], model(other)[:, :changed]
        assert torch.equal(before, after) != leaks, (model.causal, changed)
        # the changed position and those after it do see the change, with or without mask
        assert not torch.equal(model(ids)[:, changed:], model(other)[:, changed:])


def test_gradient_of_a_prediction_reaches_only_past_tokens_under_the_mask(
        masked_model, unmasked_model):
    ids = random_ids(1, 8, seed=2)
    t = 3
    for model, reaches_future in ((masked_model, False), (unmasked_model, True)):
        embedded = model.token_embedding(ids).detach().requires_grad_()
        handle = model.token_embedding.register_forward_hook(lambda *_, given=embedded: given)
        try:
            model(ids)[0, t].logsumexp(dim=-1).backward()
        finally:
            handle.remove()
        per_position = embedded.grad[0].abs().sum(dim=-1)  # (T,)
        assert (per_position[: t + 1] > 0).all()
        assert bool((per_position[t + 1:] > 0).any()) == reaches_future


def test_generate_appends_the_likeliest_letters_and_leaves_the_prompt_alone(masked_model):
    prompt = random_ids(2, 4, seed=3)
    kept = prompt.clone()
    written = generate(masked_model, prompt, 5)
    assert torch.equal(prompt, kept)
    assert written.shape == (2, 9) and torch.equal(written[:, :4], prompt)
    with torch.no_grad():  # each new letter is the argmax given the letters before it
        for t in range(4, 9):
            expected = masked_model(written[:, :t])[:, -1].argmax(dim=-1)
            assert torch.equal(written[:, t], expected)


def test_generate_reads_only_the_last_context_length_letters(masked_model):
    long_prompt = random_ids(1, T_MAX + 5, seed=4)
    written = generate(masked_model, long_prompt, 2)
    assert written.shape == (1, T_MAX + 7)
    tail = generate(masked_model, long_prompt[:, -T_MAX:], 1)
    assert written[0, T_MAX + 5] == tail[0, -1]


@pytest.mark.parametrize("ids, words", [
    (torch.zeros(2, 3), ["ids", "integers", "torch.float32"]),
    (torch.zeros(3, dtype=torch.long), ["ids", "2 dimensions", "(3)", "unsqueeze(0)"]),
    (torch.zeros(1, T_MAX + 1, dtype=torch.long), ["ids", f"T={T_MAX + 1}",
                                                   f"context_length={T_MAX}"]),
    (torch.full((1, 3), V, dtype=torch.long), ["ids", f"{V - 1}", f"got {V}"]),
    (torch.full((1, 3), -1, dtype=torch.long), ["ids", "got -1"]),
    ([[0, 1]], ["ids", "torch.Tensor", "list"]),
])
def test_bad_ids_get_a_message_naming_the_argument_what_it_got_and_what_was_expected(
        masked_model, ids, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        masked_model(ids)
    for word in words:
        assert word in str(raised.value)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="d_out must be divisible by num_heads"):
        TinyGPT(8, 10, d_model=10, num_heads=3)
    with pytest.raises(ValueError, match="num_layers must be at least 1, got 0"):
        TinyGPT(8, 10, num_layers=0)
    with pytest.raises(TypeError, match="new_tokens must be a positive int"):
        generate(small_model(), torch.zeros(1, 2, dtype=torch.long), 2.0)


def test_the_gpt_package_imports_no_ui():
    """helpers.gpt (model, data, training loop) imports neither ipywidgets nor matplotlib:
    its pictures are helpers.widgets.training's."""
    import subprocess
    import sys

    code = ("import sys, helpers.gpt, helpers.gpt.training, helpers.gpt.generation; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('ipywidgets', 'matplotlib')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "[]"
