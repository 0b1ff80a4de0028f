"""Notebook 09's generation helpers: the KV cache equals recomputation, left-padded batches
equal each prompt alone (with position ids, and not without), the cache's memory is the
formula, inputs are never changed, and bad input is explained."""

import pytest
import torch
from torch.nn import functional as F
from torch.nn.attention.bias import causal_lower_right

from helpers.attention import causal_mask
from helpers.gpt.data import encode
from helpers.gpt.generation import (
    KVCache,
    cached_attention,
    forward_with_cache,
    generate_batch,
    generate_with_cache,
    generate_without_cache,
    generation_trace,
    left_pad,
    new_query_mask,
)
from helpers.gpt.model import TinyGPT, generate
from helpers.gpt.training import one_thread
from tests.gpt.support import small_model

# Cached and recomputed logits come from the same float32 operations in another grouping
# (one row of a matrix product instead of many): they agree to rounding, not bit for bit.
TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}
STEPS = 54  # at least 50 generation steps


@pytest.fixture(autouse=True)
def on_one_thread():
    """Tiny tensors: on a busy 2-core machine a second thread made these tests 10 to 40
    times slower (0.3 s against 12 s for 54 steps), never faster."""
    with one_thread():
        yield


def long_model(seed=0, **sizes):
    """A seeded TinyGPT with room for a prompt and STEPS new tokens."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        sizes = {"d_model": 16, "num_heads": 2, "num_layers": 2, **sizes}
        return TinyGPT(8, 64, **sizes).eval()


def prompts():
    return [encode("abcab"), encode("cd"), encode("efgefgef"), encode("h")]


def test_an_empty_cache_gives_exactly_the_models_forward():
    model = long_model()
    ids = torch.randint(0, 8, (3, 11), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits, weights = forward_with_cache(model, ids, KVCache())
        expected, expected_weights = model(ids, return_weights=True)
    assert torch.equal(logits, expected)
    assert torch.equal(weights, expected_weights)  # (B, L, H, T, T)


def test_prefill_then_one_token_at_a_time_equals_the_forward_over_everything():
    model = long_model()
    ids = torch.randint(0, 8, (2, 20), generator=torch.Generator().manual_seed(1))
    cache = KVCache()
    with torch.no_grad():
        pieces = [forward_with_cache(model, ids[:, :5], cache)[0]]  # a prefill of 5
        pieces += [forward_with_cache(model, ids[:, t:t + 1], cache)[0] for t in range(5, 12)]
        pieces.append(forward_with_cache(model, ids[:, 12:], cache)[0])  # 8 at once
        expected = model(ids)
    torch.testing.assert_close(torch.cat(pieces, dim=1), expected, **TOLERANCE)
    assert len(cache) == 20


@pytest.mark.parametrize("batch", [1, 3])
def test_cached_generation_equals_recomputation_over_more_than_50_steps(batch):
    model = long_model(seed=batch)
    ids = torch.randint(0, 8, (batch, 6), generator=torch.Generator().manual_seed(batch))
    recomputed, recomputed_logits = generate_without_cache(model, ids, STEPS)
    cached, cached_logits = generate_with_cache(model, ids, STEPS)
    assert cached.shape == (batch, 6 + STEPS)
    assert torch.equal(cached, recomputed)
    torch.testing.assert_close(cached_logits, recomputed_logits, **TOLERANCE)
    # the tokens are not decided by a near tie, which rounding could flip
    top_two = recomputed_logits.topk(2, dim=-1).values
    assert (top_two[..., 0] - top_two[..., 1]).min() > 100 * TOLERANCE["atol"]
    # and notebook 08's generate writes the same tokens
    assert torch.equal(generate(model, ids, STEPS), recomputed)


def test_generation_is_greedy_the_first_token_is_the_argmax_of_the_prompts_last_logits():
    model = long_model()
    ids = encode("abcabc")[None]
    with torch.no_grad():
        expected = model(ids)[0, -1].argmax()
    written, logits = generate_with_cache(model, ids, 1)
    assert written[0, -1] == expected and logits.shape == (1, 1, 8)


def test_one_new_query_needs_no_mask_and_several_need_the_bottom_right_one():
    assert new_query_mask(1, 9) is None
    mask = new_query_mask(3, 7)
    assert torch.equal(mask, causal_mask(7)[-3:])
    # the same as PyTorch's causal_lower_right, and not is_causal's top-left mask
    lower_right = causal_lower_right(3, 7)
    values = torch.eye(7)  # the output is the weights
    query = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    key = torch.randn(7, 4, generator=torch.Generator().manual_seed(1))
    by_object = F.scaled_dot_product_attention(query, key, values, attn_mask=lower_right)
    assert torch.equal(by_object > 0, mask)
    top_left = F.scaled_dot_product_attention(query, key, values, is_causal=True)
    assert not torch.equal(top_left > 0, mask)


def test_a_single_new_query_gives_the_same_output_with_or_without_a_causal_mask():
    model = long_model()
    ids = torch.randint(0, 8, (2, 9), generator=torch.Generator().manual_seed(2))
    attention = model.blocks[0].attention
    x = model.token_embedding(ids).detach()  # (B, T, d_model)
    outputs = []
    for mask in (None, causal_mask(10)[-1:]):
        cache = KVCache()
        with torch.no_grad():
            cached_attention(attention, x, cache, 0, new_query_mask(9, 9))
            newest = model.token_embedding(torch.tensor([[3], [4]]))
            outputs.append(cached_attention(attention, newest, cache, 0, mask)[0])
    assert torch.equal(outputs[0], outputs[1])
    assert causal_mask(10)[-1:].all()  # the last row of a causal mask blocks nothing


def test_the_cache_memory_is_the_formula_and_the_tensors_sizes():
    model = long_model(d_model=24, num_heads=3, num_layers=3)
    cache = KVCache()
    B, T = 2, 13
    ids = torch.randint(0, 8, (B, T), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        forward_with_cache(model, ids, cache)
    L, H, head_dim, bytes_per_number = 3, 3, 8, 4
    assert len(cache) == T and len(cache.keys) == len(cache.values) == L
    assert all(k.shape == (B, H, T, head_dim) for k in [*cache.keys, *cache.values])
    formula = 2 * L * H * head_dim * T * bytes_per_number * B
    assert cache.nbytes == formula == sum(t.untyped_storage().nbytes()
                                          for t in [*cache.keys, *cache.values])
    with torch.no_grad():
        forward_with_cache(model, ids[:, :1], cache)  # one more token: one more column
    assert cache.nbytes == formula * (T + 1) // T


def test_batched_left_padded_generation_equals_each_prompt_alone_with_position_ids():
    model = long_model()
    ids, is_token = left_pad(prompts())
    written, logits = generate_batch(model, ids, is_token, 20)
    for row, prompt in enumerate(prompts()):
        alone, alone_logits = generate_with_cache(model, prompt[None], 20)
        assert torch.equal(written[row, -20:], alone[0, len(prompt):]), row
        torch.testing.assert_close(logits[row], alone_logits[0], **TOLERANCE)


def test_without_position_ids_the_padded_prompts_get_other_continuations():
    model = long_model()
    ids, is_token = left_pad(prompts())
    written, logits = generate_batch(model, ids, is_token, 20, use_position_ids=False)
    for row, prompt in enumerate(prompts()):
        alone, alone_logits = generate_with_cache(model, prompt[None], 20)
        padded = len(prompt) < ids.shape[1]
        same_tokens = torch.equal(written[row, -20:], alone[0, len(prompt):])
        gap = (logits[row] - alone_logits[0]).abs().max().item()
        if padded:
            assert gap > 0.1 and not same_tokens, row
        else:  # the longest prompt has no padding: its columns are its positions
            assert gap < 1e-5 and same_tokens, row


def test_left_pad_puts_each_prompt_at_the_end_of_its_row():
    ids, is_token = left_pad([encode("abc"), encode("d")], pad_id=7)
    assert ids.tolist() == [[0, 1, 2], [7, 7, 3]]
    assert is_token.tolist() == [[True, True, True], [False, False, True]]


def test_generation_never_changes_its_inputs():
    model = long_model()
    state = {name: value.clone() for name, value in model.state_dict().items()}
    ids = encode("abcabc")[None]
    ids_before = ids.clone()
    generate_with_cache(model, ids, 5)
    generate_without_cache(model, ids, 5)
    generation_trace(model, ids[0], 5)
    batch_prompts = prompts()
    padded, is_token = left_pad(batch_prompts)
    padded_before, is_token_before = padded.clone(), is_token.clone()
    generate_batch(model, padded, is_token, 5)
    assert torch.equal(ids, ids_before)
    assert torch.equal(padded, padded_before) and torch.equal(is_token, is_token_before)
    assert all(torch.equal(p, q) for p, q in zip(batch_prompts, prompts(), strict=True))
    assert all(torch.equal(state[name], value) for name, value in model.state_dict().items())


def test_the_trace_records_the_newest_tokens_row_and_the_growing_cache():
    model = long_model()
    prompt = encode("abcab")
    trace = generation_trace(model, prompt, 4)
    written, _ = generate_with_cache(model, prompt[None], 4)
    assert torch.equal(trace["ids"], written[0])
    assert trace["cache_tokens"] == [5, 6, 7, 8]
    assert [tuple(w.shape) for w in trace["weights"]] == [(2, 2, 5), (2, 2, 6), (2, 2, 7),
                                                          (2, 2, 8)]
    with torch.no_grad():
        _, weights = model(written[:, :8], return_weights=True)  # (1, L, H, T, T)
    for step, row in enumerate(trace["weights"]):
        query = 4 + step  # the newest token at that step
        torch.testing.assert_close(row, weights[0, :, :, query, :query + 1], **TOLERANCE)
    bytes_per_token = 2 * 2 * 2 * 8 * 4  # 2 * L * H * head_dim * bytes
    assert trace["cache_bytes"] == [t * bytes_per_token for t in trace["cache_tokens"]]


# ---------------------------------------------------------------- errors that speak


@pytest.mark.parametrize("call, words", [
    (lambda m: generate_with_cache(m, encode("abc")[None], 70),
     ["T=3", "new_tokens=70", "72 positions", "context_length=64", "at most 62"]),
    (lambda m: generate_without_cache(m, encode("abc"), 2), ["2 dimensions (B, T)",
                                                             "unsqueeze(0)"]),
    (lambda m: generate_with_cache(m, encode("abc")[None], 0), ["new_tokens"]),
    (lambda m: generate_with_cache(m, torch.tensor([[0.5, 1.0]]), 2), ["token ids", "float"]),
    (lambda m: generate_with_cache(m, torch.tensor([[3, 9]]), 2), ["0 to vocab_size - 1 = 7",
                                                                   "9"]),
    (lambda m: generate_with_cache(torch.nn.Linear(2, 2), encode("ab")[None], 2),
     ["TinyGPT", "Linear"]),
    (lambda m: left_pad([encode("ab"), [0, 1]]), ["prompts[1]", "list"]),
    (lambda m: left_pad(encode("ab")), ["list of 1-d tensors", "Tensor"]),
    (lambda m: left_pad([encode("ab"), torch.tensor([0.0, 1.0])]), ["prompts[1]", "float32"]),
    (lambda m: generate_batch(m, *left_pad([encode("ab"), encode("c")]), 70),
     ["context_length=64"]),
    (lambda m: generate_batch(m, torch.tensor([[1, 2], [3, 0]]),
                              torch.tensor([[True, True], [True, False]]), 2),
     ["padded on the LEFT", "rows [1]"]),
    (lambda m: generate_batch(m, torch.tensor([[1, 2]]), torch.tensor([[1, 1]]), 2),
     ["is_token must be a boolean tensor", "torch.int64"]),
    (lambda m: generation_trace(m, encode("abc")[None], 2), ["one prompt, a 1-d tensor",
                                                            "(1, 3)"]),
])
def test_bad_input_is_explained(call, words):
    with pytest.raises((TypeError, ValueError)) as raised:
        call(long_model())
    for word in words:
        assert word in str(raised.value), str(raised.value)


def test_the_shared_small_model_also_works_up_to_its_context_length():
    model = small_model()  # context_length 10
    written, _ = generate_with_cache(model, encode("abcd")[None], 6)
    assert torch.equal(written, generate_without_cache(model, encode("abcd")[None], 6)[0])


def test_the_positions_allow_one_more_token_than_they_read():
    """A prompt of T tokens may get context_length - T + 1 new ones: the last token written
    is never read. Every greedy loop agrees with decoding.generate(context="stop")."""
    from helpers.gpt.decoding import generate as generate_any

    model, prompt = long_model(), encode("abcdefgha")[None]  # C = 64, T = 9
    most = model.context_length - prompt.shape[1] + 1  # 56
    ids, is_token = left_pad([prompt[0], encode("cd")])
    for loop in (generate_with_cache, generate_without_cache,
                 lambda m, p, n: generate_any(m, p, n, context="stop"),
                 lambda m, p, n: generate_batch(m, ids, is_token, n)):
        written, logits = loop(model, prompt, most)
        assert written.shape[1] == model.context_length + 1 and logits.shape[1] == most
        with pytest.raises(ValueError, match=f"at most {most} new tokens"):
            loop(model, prompt, most + 1)
    trace = generation_trace(model, prompt[0], most)
    assert len(trace["ids"]) == model.context_length + 1
    with pytest.raises(ValueError, match=f"at most {most} new tokens"):
        generation_trace(model, prompt[0], most + 1)
