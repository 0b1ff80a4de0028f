"""The running example (helpers.data) and seeded draws (helpers.seeding): built at a seed
without touching the learner's random state, the same on every call."""

import pytest
import torch

from helpers.data import (
    PAD_ID,
    REFERENCE_SEED,
    TOKENS,
    example_causal_attention,
    example_inputs,
    example_queries_and_keys,
    example_self_attention,
    padded_example_embeddings,
    padded_example_ids,
)
from helpers.seeding import seeded


def test_seeded_draws_at_the_seed_and_gives_the_state_back():
    torch.manual_seed(1)
    expected_next = torch.rand(3)
    torch.manual_seed(1)
    with seeded(5):
        inside = torch.rand(3)
    assert torch.equal(torch.rand(3), expected_next), "the learner's next draw changed"
    torch.manual_seed(5)
    assert torch.equal(inside, torch.rand(3))


def test_seeded_gives_the_state_back_when_the_block_raises():
    torch.manual_seed(2)
    expected_next = torch.rand(2)
    torch.manual_seed(2)
    with pytest.raises(RuntimeError), seeded(9):
        raise RuntimeError("a failing block")
    assert torch.equal(torch.rand(2), expected_next)


@pytest.mark.parametrize("seed", [1.5, "789", None, True])
def test_seeded_names_a_seed_that_is_not_a_whole_number(seed):
    with pytest.raises(TypeError, match="seed must be a whole number.*got"), seeded(seed):
        pass


def test_the_example_self_attention_has_the_reference_weights():
    torch.manual_seed(REFERENCE_SEED)
    reference = torch.nn.Linear(3, 2, bias=False).weight.detach().clone()  # W_query first
    torch.manual_seed(0)
    expected_next = torch.rand(1)
    torch.manual_seed(0)
    module = example_self_attention()
    assert torch.equal(torch.rand(1), expected_next), "building it changed the global state"
    assert torch.equal(module.W_query.weight.detach(), reference)
    assert module.W_query.bias is None
    assert not torch.equal(example_self_attention(1).W_query.weight,
                           module.W_query.weight), "the seed is not used"


def test_the_example_causal_attention_is_the_same_at_the_same_seed():
    first, second = example_causal_attention(123, dropout=0.5), example_causal_attention(123)
    assert torch.equal(first.W_key.weight, second.W_key.weight)
    assert first.dropout.p == 0.5 and second.dropout.p == 0.0
    x = example_inputs().unsqueeze(0)  # (1, T, 3)
    assert second.eval()(x).shape == (1, len(TOKENS), 2)


@pytest.mark.parametrize("side", ["right", "left"])
def test_the_padded_example_holds_each_sequence_s_tokens_then_padding(side):
    ids = padded_example_ids([6, 2, 4], 6, side=side)
    assert ids.shape == (3, 6)
    assert (ids != PAD_ID).sum(dim=1).tolist() == [6, 2, 4]
    real = ids[1][ids[1] != PAD_ID].tolist()
    assert [TOKENS[i - 1] for i in real] == ["one", "step"]  # sequence 1 starts at "one"
    pads = (ids == PAD_ID).nonzero()[:, 1]
    assert (pads >= 2).all() if side == "right" else (pads < 4).all()
    embeddings = padded_example_embeddings(ids)
    assert embeddings.shape == (3, 6, 3)
    assert torch.equal(embeddings[ids == PAD_ID], torch.zeros(int((ids == PAD_ID).sum()), 3))
    assert torch.equal(embeddings[0], example_inputs())


def test_the_padded_example_names_too_many_sequences():
    with pytest.raises(ValueError, match="lengths holds at most 3 sequences, got 4"):
        padded_example_ids([1, 1, 1, 1], 6)


def test_the_example_queries_and_keys_are_the_example_layers_outputs():
    module = example_self_attention(5)
    queries, keys = example_queries_and_keys(5)
    torch.testing.assert_close(queries, module.W_query(example_inputs()).detach())
    torch.testing.assert_close(keys, module.W_key(example_inputs()).detach())
    assert queries.shape == keys.shape == (len(TOKENS), 2) and not queries.requires_grad
