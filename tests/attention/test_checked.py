"""The layers learners read print plainly: their checks run apart (CheckedModule), before
``__init__`` and before every call, and still catch every bad argument and input."""

import copy
import inspect
import pickle

import pytest
import torch

from helpers.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention,
)
from helpers.gpt.model import Block, TinyGPT

# What the notebooks print with inspect.getsource.
PRINTED = [SelfAttention.__init__, SelfAttention.forward, CausalAttention.__init__,
           CausalAttention.forward, MultiHeadAttention.__init__, MultiHeadAttention.forward,
           Block.forward, TinyGPT.__init__, TinyGPT.forward]


@pytest.mark.parametrize("function", PRINTED, ids=lambda f: f.__qualname__)
def test_the_printed_source_holds_no_check(function):
    source = inspect.getsource(function)
    assert source.lstrip().startswith("def "), "a wrapper or decorator is printed"
    assert "check" not in source, source


@pytest.mark.parametrize(("build", "argument"), [
    (lambda: SelfAttention(0, 2), "d_in"),
    (lambda: SelfAttention(3, 2.5), "d_out"),
    (lambda: CausalAttention(3, 2, context_length=-1), "context_length"),
    (lambda: CausalAttention(3, 2, 6, dropout=1.5), "dropout"),
    (lambda: MultiHeadAttention(3, 4, 6, 0.0, num_heads=3), "divisible by num_heads"),
    (lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=0), "num_heads"),
    (lambda: TinyGPT(16, 8, num_layers=0), "num_layers"),
    (lambda: TinyGPT("16", 8), "vocab_size"),
])
def test_a_bad_argument_is_named_before_the_layer_is_built(build, argument):
    with pytest.raises((TypeError, ValueError), match=argument):
        build()


def example(T=4):
    return torch.randn(2, T, 3, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(("call", "words"), [
    (lambda: SelfAttention(3, 2)(torch.zeros(4, 5)), "d_in=3 features"),
    (lambda: SelfAttention(3, 2)(torch.zeros(4, 3, dtype=torch.float64)), "dtype"),
    (lambda: CausalAttention(3, 2, 6)(example(T=7)), "context_length=6"),
    (lambda: CausalAttention(3, 2, 6)(example(), torch.ones(2, 4)), "padding_mask"),
    (lambda: MultiHeadAttention(3, 4, 6, 0.0, 2)(example(), torch.ones(2, 5, dtype=bool)),
     r"padding_mask must have shape \(B, T\)"),
    (lambda: CausalAttention(3, 2, 6)(example()[0]), "x must have 3 dimensions"),
    (lambda: TinyGPT(16, 8)(torch.tensor([[1, 16]])), "vocab_size - 1 = 15"),
])
def test_a_bad_input_is_named_before_the_layer_runs(call, words):
    with pytest.raises((TypeError, ValueError), match=words):
        call()


def test_a_learner_s_subclass_keeps_the_checks_and_its_own_code():
    class MyCausalAttention(CausalAttention):
        def __init__(self, d_in, d_out, context_length):
            super().__init__(d_in, d_out, context_length)
            self.calls = 0

        def forward(self, x, padding_mask=None, return_weights=False):
            self.calls += 1
            return super().forward(x, padding_mask, return_weights)

    module = MyCausalAttention(3, 2, 6)
    assert module(example()).shape == (2, 4, 2) and module.calls == 1
    with pytest.raises(ValueError, match="context_length=6"):
        module(example(T=7))
    assert module.calls == 1, "the check runs before the learner's forward"
    with pytest.raises(ValueError, match="d_in"):
        MyCausalAttention(0, 2, 6)


def test_checked_layers_copy_pickle_and_keep_their_state_dicts():
    torch.manual_seed(0)
    module = CausalAttention(3, 2, 6).eval()
    assert list(module.state_dict()) == ["W_query.weight", "W_key.weight", "W_value.weight"]
    for twin in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        torch.testing.assert_close(twin(example()), module(example()))
        with pytest.raises(ValueError, match="context_length=6"):
            twin(example(T=7))
