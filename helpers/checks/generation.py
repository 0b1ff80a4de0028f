"""Checks for notebook 09's exercises: the memory of a KV cache, a KV cache class, one new
token attending over the cache, and the position of the next token of a left-padded
sequence."""

import math

import torch

from helpers.attention import padding_mask
from helpers.checks.feedback import (
    NOT_ATTEMPTED,
    Feedback,
    as_number,
    close,
    compare,
    construct,
    correct,
    describe,
    exercise_check,
    hint_of,
    incorrect,
    not_attempted,
    run,
    shape_text,
    tensor_problem,
    with_context,
)

# ---------------------------------------------------------------- exercise 1

# (B, T, num_layers, num_heads, head_dim, dtype): GPT-2 small's sizes, then sizes whose
# factors differ, so that each missing or extra factor gives another number.
CACHE_SIZES = [
    (1, 1024, 12, 12, 64, torch.float32),
    (3, 7, 5, 11, 13, torch.float16),
    (2, 9, 3, 5, 7, torch.float64),
    (5, 4, 2, 3, 8, torch.bfloat16),
]


def _bytes_per_number(dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def _cache_bytes(B, T, L, H, head_dim, dtype) -> int:
    return 2 * L * H * head_dim * T * _bytes_per_number(dtype) * B


FACTORS_HINT = ("a cache holds, for each of B sequences and T tokens, a key AND a value in "
                "every layer and every head, each of head_dim numbers of the dtype's size "
                "in bytes.")

# Each slip, as the number it gives: (what it computes, what the message says).
CACHE_SLIPS = [
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) // 2,
     "you counted the keys or the values, not both: the cache keeps two tensors per layer"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) // B,
     "the batch is missing: every sequence of the batch has a cache of its own"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) // L,
     "the layers are missing: every layer keeps its own keys and values"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) // H,
     "the heads are missing: every head has its own keys and values, of head_dim numbers"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) * H,
     "the heads are counted twice: num_heads * head_dim numbers per token already cover "
     "every head"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) // _bytes_per_number(dt),
     "this counts numbers, not bytes: multiply by the size of one number of the dtype"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) * 8,
     "this counts bits, not bytes: a byte is 8 bits"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T, L, H, hd, dt) * 4
     // _bytes_per_number(dt),
     "every number is counted as 4 bytes, whatever the dtype: float16 and bfloat16 take 2, "
     "float64 takes 8"),
    (lambda B, T, L, H, hd, dt: _cache_bytes(B, T + 1, L, H, hd, dt),
     "one token too many: the cache holds T tokens"),
]


def _cache_text(B, T, L, H, head_dim, dtype) -> str:
    return (f"B={B}, T={T}, num_layers={L}, num_heads={H}, head_dim={head_dim}, "
            f"dtype={dtype}")


@exercise_check(FACTORS_HINT + " The size in bytes of one number of a dtype: "
                               "dtype.itemsize.")
def check_kv_cache_bytes(kv_cache_bytes) -> Feedback:
    """Exercise: kv_cache_bytes(B, T, num_layers, num_heads, head_dim, dtype) -> int."""
    name = "kv_cache_bytes"
    answers = []
    for size in CACHE_SIZES:
        B, T, L, H, head_dim, dtype = size
        on = f"for {_cache_text(*size)}"
        outcome = run(kv_cache_bytes, name, {"B": B, "T": T, "num_layers": L, "num_heads": H,
                                             "head_dim": head_dim, "dtype": dtype})
        if outcome.failed:
            return with_context(outcome.failed, on)
        if isinstance(outcome.answer, torch.Tensor) and outcome.answer.device.type != "cpu":
            return incorrect(f"your answer is a Tensor on device '{outcome.answer.device}'; a "
                             "number of bytes is a plain number", "return an int.")
        answer = as_number(outcome.answer)
        if answer is None or math.isnan(answer):
            what = "NaN" if answer is not None else describe(outcome.answer)
            return incorrect(f"{name} returned {what}, expected a number of bytes",
                             "return the count itself, an int.")
        if not float(answer).is_integer():
            return with_context(incorrect(
                f"{name} returned {answer}, not a whole number of bytes: is there a `/` "
                "(a conversion to KB, MB or GB?) where every factor is a whole number?",
                FACTORS_HINT), on)
        answers.append(int(answer))
    expected = [_cache_bytes(*size) for size in CACHE_SIZES]
    if answers == expected:
        return correct("two tensors per layer, each B x H x T x head_dim numbers of the "
                       "dtype's size.")
    for slip, message in CACHE_SLIPS:
        if answers == [slip(*size) for size in CACHE_SIZES]:
            return incorrect(message, FACTORS_HINT)
    first = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    verdict = "too many" if answers[first] > expected[first] else "too few"
    return with_context(incorrect(f"{answers[first]:,} bytes is {verdict}", FACTORS_HINT),
                        f"for {_cache_text(*CACHE_SIZES[first])}")


# ---------------------------------------------------------------- exercise 3

# (B, H, T cached, head_dim): one head and one cached token among them. The first case
# tells every scale apart: sqrt(head_dim), head_dim, sqrt(H * head_dim) and the notebook's
# sqrt(16) all differ there (with head_dim = 4, sqrt(16) would pass for head_dim).
ATTEND_SIZES = [(2, 3, 5, 8), (1, 1, 1, 8), (3, 2, 9, 2)]
NOTEBOOK_HEAD_DIM = 16  # notebook 9's model: d_model 32, 2 heads

ATTEND_HINT = ("put the new key and value after the cached ones along the tokens axis, then "
               "attend as always: scores scaled by 1/sqrt(head_dim), a softmax over the keys, "
               "the weighted sum of the values.")


def _attend_inputs(B, H, T, head_dim, generator):
    """query (B, H, 1, hd), cached keys and values (B, H, T, hd), new key and value
    (B, H, 1, hd); large enough scores that every slip shows."""
    def draw(tokens, scale=1.0):
        return torch.randn(B, H, tokens, head_dim, generator=generator) * scale
    return {"query": draw(1, 2.0), "cached_keys": draw(T, 2.0), "cached_values": draw(T),
            "new_key": draw(1, 2.0), "new_value": draw(1)}


def _attend(query, keys, values, scale):
    weights = torch.softmax(query @ keys.transpose(-2, -1) * scale, dim=-1)  # (B, H, 1, T_k)
    return weights @ values  # (B, H, 1, hd)


def _attend_mistakes(inputs):
    query, head_dim = inputs["query"], inputs["query"].shape[-1]
    keys = torch.cat([inputs["cached_keys"], inputs["new_key"]], dim=2)  # (B, H, T + 1, hd)
    values = torch.cat([inputs["cached_values"], inputs["new_value"]], dim=2)
    scale = 1 / math.sqrt(head_dim)
    expected = _attend(query, keys, values, scale)
    H = query.shape[1]
    swapped = torch.cat([inputs["new_value"], inputs["cached_values"]], dim=2)
    crossed_keys = torch.cat([inputs["cached_keys"], inputs["new_value"]], dim=2)
    crossed_values = torch.cat([inputs["cached_values"], inputs["new_key"]], dim=2)
    roles_hint = ("the query is compared with the keys (the scores); the weights then mix the "
                  "values.")
    notebook = [] if head_dim == NOTEBOOK_HEAD_DIM else [(
        _attend(query, keys, values, 1 / math.sqrt(NOTEBOOK_HEAD_DIM)), incorrect(
            f"the scores are divided by sqrt({NOTEBOOK_HEAD_DIM}): {NOTEBOOK_HEAD_DIM} is the "
            "head_dim of the notebook's model, not of these inputs (head_dim = "
            f"{head_dim} here)", "take the size from the query you are given."))]
    mistakes = [
        *notebook,
        (_attend(query, values, keys, scale), incorrect(
            "the keys and the values are swapped: the scores compare the query with the "
            "values, and the weights mix the keys", roles_hint)),
        (_attend(query, crossed_keys, crossed_values, scale), incorrect(
            "the new key and the new value are swapped: the new value joined the cached keys, "
            "and the new key the cached values", roles_hint)),
        (_attend(query, inputs["cached_keys"], inputs["cached_values"], scale), incorrect(
            "the new token attends to the cached tokens only: its own key and value must join "
            "the cache first, a token may attend to itself", ATTEND_HINT)),
        (values[:, :, :1], incorrect(
            "all the weight is on the first key: a causal mask aligned top-left "
            "(is_causal=True) with one query over many keys lets it see key 0 only; the newest "
            "query may see every key", "one new query has every key in its past: it needs "
            "no mask at all.")),
        (_attend(query, keys, values, 1.0), incorrect(
            "the scores are not scaled: divide them by sqrt(head_dim)", ATTEND_HINT)),
        (_attend(query, keys, values, 1 / head_dim), incorrect(
            "the scores are divided by head_dim, not by its square root", ATTEND_HINT)),
        (_attend(query, keys, values, 1 / math.sqrt(head_dim * H)), incorrect(
            "the scores are divided by sqrt(H * head_dim): each head's scale is its own "
            "head_dim", ATTEND_HINT)),
        (_attend(query, keys, swapped, scale), incorrect(
            "the keys and the values are not in the same order: the new key went after the "
            "cached keys, the new value before the cached values", "concatenate keys and "
            "values the same way.")),
        (values.sum(dim=2, keepdim=True), incorrect(
            "every value has weight 1: the softmax ran over the queries axis (one query), "
            "not over the keys", "the keys are the last dimension of the scores.")),
    ]
    return expected, mistakes


@exercise_check(ATTEND_HINT)
def check_attend_over_cache(attend_over_cache) -> Feedback:
    """Exercise: attend_over_cache(query, cached_keys, cached_values, new_key, new_value)
    -> the new token's output (B, H, 1, head_dim)."""
    name = "attend_over_cache"
    generator = torch.Generator().manual_seed(8)
    for B, H, T, head_dim in ATTEND_SIZES:
        inputs = _attend_inputs(B, H, T, head_dim, generator)
        on = (f"for B={B}, H={H}, head_dim={head_dim} and {T} cached token"
              f"{'s' if T > 1 else ''}")
        outcome = run(attend_over_cache, name, inputs, extra_errors=[
            ("must match except in dimension",
             "the tensors were concatenated along a dimension other than the tokens axis, "
             "where their sizes differ", "(B, H, T, head_dim): the tokens are dimension 2."),
            *[(words, "the shapes do not fit a matrix product: were the keys transposed, "
                      "(..., T, head_dim) -> (..., head_dim, T)?",
               "query (B, H, 1, head_dim) times the keys transposed gives (B, H, 1, T + 1).")
              for words in ("cannot be multiplied", "Expected size for first two dimensions")],
        ])
        if outcome.failed:
            return with_context(outcome.failed, on)
        expected, mistakes = _attend_mistakes(inputs)
        answer = outcome.answer
        if isinstance(answer, torch.Tensor) and tuple(answer.shape) == (B, H, 1, T + 1):
            return with_context(incorrect(
                "this is the attention weights (B, H, 1, T + 1); the output is their "
                "weighted sum of the values", ATTEND_HINT), on)
        problem = tensor_problem(answer, name, expected)
        if problem:
            return with_context(problem, on)
        result = compare(answer, expected, mistakes, name, incorrect(
            "not the new token's output", ATTEND_HINT))
        if not result.correct:
            return with_context(result, on)
    return correct("the new token attends over the cached tokens and itself, with no mask, "
                   "whatever the sizes.")


# ---------------------------------------------------------------- exercise 2: the cache class

# (B, H, head_dim, layers, tokens read at each step): a prompt, then tokens one by one (and
# once two at a time); one layer, and several, so that a cache mixing its layers shows; B
# unlike the number of layers, so that a len() counting B * T is not taken for another slip.
CACHE_RUNS = [
    (3, 2, 4, 2, [3, 1, 1]),
    (1, 2, 5, 3, [1, 2, 1, 1]),
    (3, 1, 2, 1, [4, 1]),
]

CACHE_HINT = ("keep one list of keys and one of values, one entry per layer: a layer's first "
              "append adds its entry, later ones put the new tokens after the cached ones "
              "along the tokens axis, dimension 2 of (B, H, T, head_dim). len is the number "
              "of tokens cached, the same in every layer.")

SHARED_LISTS = ("a new cache is not empty: it shares its lists with another cache. A list "
                "written in the class body (or as a default argument) belongs to every "
                "instance at once")


def _length_problem(cache, expected: int, layers: int, calls: int, name: str):
    """Feedback when len(cache) is not ``expected`` tokens, else None."""
    outcome = run(len, f"len() of a {name}", {"cache": cache}, check_inputs=False)
    if outcome.failed:
        if expected == 0 and isinstance(outcome.error, (IndexError, KeyError)):
            raised = hint_of(outcome.failed).rstrip(".")
            return incorrect(f"{raised}. A new cache holds no token yet: its length is 0",
                             "ask how many layers it holds before you look inside its "
                             "first one.")
        if isinstance(outcome.error, TypeError) and "len()" in str(outcome.error):
            return incorrect(f"len() of a {name} raised TypeError: the class has no "
                             "__len__ method", CACHE_HINT)
        return outcome.failed
    length = outcome.answer
    if length == expected:
        return None
    if expected == 0:
        return incorrect(SHARED_LISTS, "create the lists in __init__, on self.")
    counted = [words for wrong, words in (
        (layers, "the layers"), (calls, "the calls to append"),
        (expected * layers, "the tokens of every layer together"),
        (expected * 2, "the keys and the values together")) if length == wrong]
    if counted:  # after the first step, the layers and the calls are as many
        return incorrect(f"len() gives {length}, which counts {' or '.join(counted)}; it "
                         f"should count the tokens cached ({expected})",
                         "every layer caches the same tokens: look at one layer's keys.")
    return incorrect(f"len() gives {length}; {expected} tokens are cached", CACHE_HINT)


def _stored_problem(cache, before: int, expected: int):
    """Feedback when the cache did not grow at a step that added tokens (append returned
    the joined tensors, checked before, but did not keep them), else None."""
    if expected == before or before == 0:
        return None
    outcome = run(len, "len() of the cache after a step", {"cache": cache}, check_inputs=False)
    if outcome.failed or outcome.answer != before:
        return None  # len() itself is judged next
    stored = getattr(cache, "keys", None)  # the skeleton's list of keys, if it is kept
    if isinstance(stored, list) and stored and isinstance(stored[0], torch.Tensor) \
            and stored[0].dim() == 4 and stored[0].shape[2] != before:
        return None  # the keys grew: len() is what is wrong
    return incorrect(f"the cache did not grow: {expected} tokens were appended in all, and "
                     f"it still holds the {before} it held before this step. append returns "
                     "the joined keys and values but does not keep them: store the joined "
                     "tensors back in the cache, in place of the layer's old ones",
                     CACHE_HINT)


def _joined(before, new):
    """The (keys, values) of a layer after ``new`` is appended to ``before`` (None at the
    layer's first append): the new tokens after the cached ones, on the tokens axis."""
    if before is None:
        return new
    return torch.cat([before[0], new[0]], dim=2), torch.cat([before[1], new[1]], dim=2)


def _append_problem(answer, layer: int, before, new):
    """Feedback when what append returned is not ``before`` followed by ``new`` (each a
    (keys, values) pair; ``before`` is None on a layer's first append), else None."""
    if answer is None:
        return incorrect("append returned None: is a `return` missing? It returns all of the "
                         "layer's keys and values, the cached ones and the new", CACHE_HINT)
    if isinstance(answer, torch.Tensor) or not isinstance(answer, (tuple, list)) \
            or len(answer) != 2:
        return incorrect(f"append returned {describe(answer)}; expected a pair (keys, values), "
                         "the layer's keys and its values", CACHE_HINT)
    keys, values = _joined(before, new)
    for part, got, expected in (("keys", answer[0], keys), ("values", answer[1], values)):
        problem = tensor_problem(got, f"append (its {part})", expected, shape=False)
        if problem:
            return problem
    got_keys, got_values = (part.detach() for part in answer)
    if close(got_keys, keys) and close(got_values, values):
        return None
    if close(got_keys, values) and close(got_values, keys):
        return incorrect("append returned the values first, then the keys", "return them in "
                                                                            "the order given.")
    if before and close(got_keys, new[0]) and close(got_values, new[1]):
        return incorrect("append returned only the new tokens' keys and values: the new "
                         "queries attend over the cached tokens too, so it returns all of "
                         "the layer's", CACHE_HINT)
    if before and close(got_keys, torch.cat([new[0], before[0]], dim=2)):
        return incorrect("the new tokens went before the cached ones: the tokens stay in the "
                         "order of the text, the newest last", CACHE_HINT)
    if before:
        for dim in (0, 1, 3):
            sizes = [size for axis, size in enumerate(new[0].shape) if axis != dim]
            if sizes != [size for axis, size in enumerate(before[0].shape) if axis != dim]:
                continue  # these two cannot be joined along dim: no answer did
            if close(got_keys, torch.cat([before[0], new[0]], dim=dim)):
                return incorrect(
                    f"the new keys were put after the cached ones along dimension {dim}: in "
                    "(B, H, T, head_dim) the tokens are dimension 2", CACHE_HINT)
        if close(got_keys, before[0]) and close(got_values, before[1]):
            return incorrect("append returned the keys and values cached before this call: "
                             "the new tokens' are missing from what it returns", CACHE_HINT)
        if close(got_keys, keys) and not close(got_values, values):
            return incorrect("the keys are right but not the values: are the new values put "
                             "after the cached ones too?", CACHE_HINT)
    if got_keys.dim() == 4 and got_keys.shape[:2] == keys.shape[:2] \
            and got_keys.shape[3] == keys.shape[3] and got_keys.shape[2] > keys.shape[2]:
        return incorrect(
            f"layer {layer} returned {got_keys.shape[2]} tokens where {keys.shape[2]} were "
            "given to it: its keys include another layer's. Each layer keeps its own keys "
            "and values, chosen by `layer`", CACHE_HINT)
    if tuple(got_keys.shape) != tuple(keys.shape):
        return incorrect(f"append returned keys of shape {shape_text(got_keys.shape)}, "
                         f"expected {shape_text(keys.shape)}", CACHE_HINT)
    return incorrect(f"not layer {layer}'s keys and values after the append", CACHE_HINT)


@exercise_check(CACHE_HINT)
def check_kv_cache(MyKVCache) -> Feedback:
    """Exercise: a class whose instances start empty, ``append(layer, keys, values)``
    returns all of the layer's keys and values so far, and ``len()`` counts the tokens."""
    name = "MyKVCache"
    generator = torch.Generator().manual_seed(11)
    for B, H, head_dim, layers, steps in CACHE_RUNS:
        on = (f"B={B}, H={H}, head_dim={head_dim}, {layers} layer{'s' * (layers > 1)}, "
              f"tokens read {steps}")
        cache, failed = construct(MyKVCache, name)
        if failed:
            return with_context(failed, on)
        problem = _length_problem(cache, 0, layers, 0, "new cache")
        if problem and problem.status == NOT_ATTEMPTED:  # the notebook's skeleton as given
            return not_attempted(name)
        if problem:
            return with_context(problem, on)
        cached = [None] * layers  # the check's own (keys, values) per layer
        calls = 0
        for step, T_new in enumerate(steps):
            for layer in range(layers):
                new = tuple(torch.randn(B, H, T_new, head_dim, generator=generator)
                            for _ in range(2))  # (B, H, T_new, head_dim) each
                outcome = run(cache.append, "append", {"layer": layer, "keys": new[0],
                                                       "values": new[1]}, extra_errors=[
                    ("must match except in dimension",
                     "the new tokens were put after the cached ones along another axis than "
                     "the tokens', dimension 2 of (B, H, T, head_dim)",
                     "the cached and the new tensors differ only in their number of tokens.")])
                where = f"{on}; step {step}, layer {layer}"
                if outcome.failed:
                    return with_context(outcome.failed, where)
                problem = _append_problem(outcome.answer, layer, cached[layer], new)
                if problem:
                    return with_context(problem, where)
                cached[layer] = _joined(cached[layer], new)
                calls += 1
            problem = _stored_problem(cache, sum(steps[:step]), sum(steps[:step + 1])) \
                or _length_problem(cache, sum(steps[:step + 1]), layers, calls,
                                   "cache after a step")
            if problem:
                return with_context(problem, f"{on}; after step {step}")
        other, failed = construct(MyKVCache, name)
        if failed:
            return with_context(failed, on)
        problem = _length_problem(other, 0, layers, 0, "second new cache")
        if problem:
            return with_context(problem, f"{on}; a second cache, made after the first")
    return correct("each layer keeps its own keys and values, the new tokens after the cached "
                   "ones, and len() counts the tokens, whatever the sizes.")


# ---------------------------------------------------------------- exercise 4

# (lengths, T): left padding; unsorted lengths, a row with no padding, a batch of one.
POSITION_CASES = [([3, 1, 5], 5), ([2, 6, 4, 1], 6), ([4, 4], 4), ([1], 3)]

POSITION_HINT = ("a position counts the real tokens before it, as position_ids does; the next "
                 "token of a row comes right after its last real token.")


def _position_mistakes(is_token):
    real = is_token.long().sum(dim=-1, keepdim=True)  # (B, 1)
    T = is_token.shape[-1]
    columns = torch.full_like(real, T)
    return real, [
        (columns, incorrect(
            "every row gets the number of columns, padding included: that is what "
            "torch.arange(T) gives, and a padded row's next token then sits as far to the "
            "right as the longest prompt's", POSITION_HINT)),
        (real - 1, incorrect(
            "this is the position of each row's last real token; the next token comes one "
            "after it", POSITION_HINT)),
        (columns - 1, incorrect(
            "this is the last column's index for every row: padding is counted, and it is "
            "the last token's position, not the next one's", POSITION_HINT)),
        (T - real, incorrect("this counts the padding, not the real tokens", POSITION_HINT)),
    ]


@exercise_check(POSITION_HINT + " is_token is (B, T), True at real tokens; the answer has "
                                "one column, (B, 1).")
def check_next_position_ids(next_position_ids) -> Feedback:
    """Exercise: next_position_ids(is_token) -> (B, 1) positions of the next tokens."""
    name = "next_position_ids"
    for lengths, T in POSITION_CASES:
        is_token = padding_mask(lengths, T, side="left")  # (B, T)
        on = f"for is_token of shape {shape_text(is_token.shape)} (lengths {lengths})"
        outcome = run(next_position_ids, name, {"is_token": is_token})
        if outcome.failed:
            return with_context(outcome.failed, on)
        answer = outcome.answer
        expected, mistakes = _position_mistakes(is_token)
        problem = tensor_problem(answer, name, expected, kind=None, shape=False)
        if problem:
            return with_context(problem, on)
        if answer.is_floating_point() or answer.dtype == torch.bool:
            return with_context(incorrect(
                f"{name} returned a {answer.dtype} tensor: positions index the position "
                "embedding table, so they must be integers", "a sum of a boolean tensor "
                                                             "converted to long is one."), on)
        if tuple(answer.shape) == (len(lengths),):
            return with_context(incorrect(
                f"shape {shape_text(answer.shape)} is one number per row; the new tokens are "
                "(B, 1), one column, and their positions must be too", "keep the summed "
                                                                       "dimension."), on)
        if tuple(answer.shape) in ((T,), (1, T)) and T != len(lengths):
            return with_context(incorrect(
                "this was summed over the batch (dimension 0); each row's real tokens are "
                "along dimension 1", POSITION_HINT), on)
        problem = tensor_problem(answer, name, expected, kind=None)
        if problem:
            return with_context(problem, on)
        result = compare(answer.long(), expected, mistakes, name,
                         incorrect("not the next positions", POSITION_HINT), kind=None)
        if not result.correct:
            return with_context(result, on)
    return correct("each row's next token gets the number of real tokens before it, whatever "
                   "the padding.")
