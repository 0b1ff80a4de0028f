"""Notebook 07's exercise checks: a table of right and wrong answers per check, and the
claims their messages make about PyTorch, measured."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.attention import causal_mask, padding_mask
from helpers.checks import CORRECT, INCORRECT
from helpers.checks.pytorch_attention import (
    SDPA_CASES,
    _additive_cases,
    _padding_cases,
    _sdpa_blocked,
    check_additive_mask,
    check_key_padding_mask,
    check_sdpa_mask,
)
from tests.checks.support import table_tests

NEG_INF = float("-inf")

# ---------------------------------------------------------------- sdpa_mask


def sdpa_loop(blocked):
    B, T, _ = blocked.shape
    allowed = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                allowed[b, 0, i, j] = not blocked[b, i, j]
    return allowed


def sdpa_in_place(blocked):
    blocked.logical_not_()  # the caller's mask is now inverted
    return blocked.unsqueeze(1)


SDPA_RIGHT = {
    "~ and unsqueeze": lambda blocked: (~blocked).unsqueeze(1),
    "logical_not and None": lambda blocked: blocked.logical_not()[:, None, :, :],
    "== False and view": lambda blocked: (blocked == False).view(  # noqa: E712
        blocked.shape[0], 1, *blocked.shape[1:]),
    "where": lambda blocked: torch.where(blocked, False, True).unsqueeze(1),
    "loop": sdpa_loop,
    "NumPy": lambda blocked: torch.from_numpy(~blocked.numpy()[:, None]),
}

SDPA_WRONG = {
    "not inverted": (lambda blocked: blocked.unsqueeze(1), 'reads a boolean True as "may '
                                                          'attend"'),
    "not inverted, cloned": (lambda blocked: blocked.clone()[:, None], "wrong way round"),
    "no head axis": (lambda blocked: ~blocked, "Here B = H = 3: it broadcasts without an "
                                               "error"),
    "head axis first": (lambda blocked: (~blocked).unsqueeze(0), "came before the batch"),
    "head axis between queries and keys": (lambda blocked: (~blocked).unsqueeze(2),
                                           "between the queries and the keys"),
    "float": (lambda blocked: (~blocked).unsqueeze(1).float(), "ADDS a float mask"),
    "float 0 and -inf": (lambda blocked: torch.zeros(blocked.shape).masked_fill(
        blocked, NEG_INF).unsqueeze(1), "accepts one and adds it to the scores, but"),
    "int": (lambda blocked: (~blocked).unsqueeze(1).int(), "refuses an integer one"),
    "1 - blocked": (lambda blocked: (1 - blocked).unsqueeze(1), "PyTorch refuses arithmetic "
                                                                "on booleans"),
    "not blocked": (lambda blocked: (not blocked), "asks a whole tensor for ONE True"),
    "in place": (sdpa_in_place, "changed its argument `blocked` in place"),
    "causal, whatever blocked says": (lambda blocked: causal_mask(blocked.shape[-1]).expand(
        blocked.shape[0], 1, -1, -1), "not the mask blocked stands for"),
    "everything allowed": (lambda blocked: torch.ones(blocked.shape[0], 1, *blocked.shape[1:],
                                                      dtype=torch.bool), "blocks nothing"),
    "a list": (lambda blocked: (~blocked).unsqueeze(1).tolist(), "returned a list"),
    "no return": (lambda blocked: None, "`return`"),
    "another device": (lambda blocked: (~blocked).unsqueeze(1).to("meta"), "on device 'meta'"),
}

test_sdpa_right, test_sdpa_wrong = table_tests(check_sdpa_mask, SDPA_RIGHT, SDPA_WRONG,
                                               giveaways=["unsqueeze(1)"])


def test_no_head_axis_with_another_number_of_heads_is_said_to_raise():
    # The second case has B = 2 sequences and H = 4 heads: a learner whose answer works
    # for B = H = 3 only (a (B, T, T) mask where the check expects (B, 1, T, T) there).
    def only_first(blocked):
        allowed = ~blocked
        return allowed.unsqueeze(1) if blocked.shape[0] == 3 else allowed

    feedback = check_sdpa_mask(only_first)
    assert feedback.status == INCORRECT
    assert "Here B = 2 and H = 4: SDPA raises an error" in feedback.message


def test_what_the_head_axis_message_says_is_what_sdpa_does():
    """Without a head axis, (B, T, T) lines up with (B, H, T, T) from the right: silently
    wrong when B = H, an error otherwise."""
    generator = torch.Generator().manual_seed(0)
    for lengths, T, H, side in SDPA_CASES:
        blocked = _sdpa_blocked(lengths, T, side)
        B = blocked.shape[0]
        q, k, v = (torch.randn(B, H, T, 2, generator=generator) for _ in range(3))
        right = F.scaled_dot_product_attention(q, k, v, attn_mask=(~blocked)[:, None])
        if B == H:
            flat = F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)  # no error
            if B > 1:
                assert not torch.allclose(flat, right)
        else:
            with pytest.raises(RuntimeError):
                F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)
    assert any(blocked_b == heads for blocked_b, heads in
               ((_sdpa_blocked(n, T, s).shape[0], H) for n, T, H, s in SDPA_CASES) if
               blocked_b > 1)  # some case with B = H > 1
    assert any(_sdpa_blocked(n, T, s).shape[0] != H for n, T, H, s in SDPA_CASES)


def test_sdpa_reads_true_as_may_attend_and_adds_a_float_mask():
    """The conventions the messages state, measured on the installed torch."""
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 4, 2, generator=generator), torch.randn(1, 4, 2, generator=generator)
    eye = torch.eye(4)[None]  # identity values: the output is the weights
    allowed = causal_mask(4)
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=allowed)
    assert (weights[0][~allowed] == 0).all() and (weights[0][allowed] > 0).all()
    added = F.scaled_dot_product_attention(q, k, eye, attn_mask=allowed.float())
    assert (added[0] > 0).all()  # a float 0/1 mask blocks nothing
    additive = torch.zeros(4, 4).masked_fill(~allowed, NEG_INF)  # a float 0/-inf one does
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, eye, attn_mask=additive),
                               weights)
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, k, eye, attn_mask=allowed.int())
    # a float mask: float32 or the queries' dtype, no other
    half = [t.to(torch.bfloat16) for t in (q, k, eye)]
    F.scaled_dot_product_attention(*half, attn_mask=torch.zeros(4, 4))
    F.scaled_dot_product_attention(*half, attn_mask=torch.zeros(4, 4, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(*half, attn_mask=torch.zeros(4, 4, dtype=torch.float16))


# ---------------------------------------------------------------- additive_mask


def additive_where(allowed, dtype):
    return torch.where(allowed, 0.0, torch.finfo(dtype).min).to(dtype)


def additive_product(allowed, dtype):
    return (~allowed).to(dtype) * torch.finfo(dtype).min  # 0 * min is -0.0: equal to 0.0


def additive_full(allowed, dtype):
    mask = torch.full(allowed.shape, torch.finfo(dtype).min, dtype=dtype)
    mask[allowed] = 0.0  # writes into its own new tensor only
    return mask


def additive_in_place_on_new(allowed, dtype):
    mask = torch.zeros_like(allowed, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask


def filled_with(value):
    def function(allowed, dtype):
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, value)
    return function


def filled_where(value):
    def function(allowed, dtype):
        return torch.where(allowed, torch.zeros((), dtype=dtype),
                           torch.tensor(value, dtype=dtype))
    return function


def float32_minimum_converted(allowed, dtype):
    return filled_with(torch.finfo(torch.float32).min)(allowed, torch.float32).to(dtype)


def expanded_in_place(allowed, dtype):
    mask = torch.zeros(allowed.shape[-2:], dtype=dtype).expand(allowed.shape)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def small_in_place(allowed, dtype):
    mask = torch.zeros(allowed.shape[-2:], dtype=dtype)  # (T, T): the documentation's
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def additive_in_place_on_allowed(allowed, dtype):
    result = torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    allowed.fill_(True)  # the caller's mask: everything allowed now
    return result


def additive_kept(refill: bool):
    """One tensor kept per shape and dtype, filled on every call (emptied first if
    ``refill``, else the blocked entries of every call so far add up) and returned."""
    kept = {}

    def additive_mask(allowed, dtype):
        mask = kept.setdefault((allowed.shape, dtype), torch.zeros(allowed.shape, dtype=dtype))
        if refill:
            mask.zero_()
        return mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return additive_mask


ADDITIVE_RIGHT = {
    "zeros and masked_fill": lambda allowed, dtype: filled_with(torch.finfo(dtype).min)(
        allowed, dtype),
    "where, then to(dtype)": additive_where,
    "product": additive_product,
    "full, then assign zeros": additive_full,
    "masked_fill_ on its own zeros": additive_in_place_on_new,
    "NumPy, float32 cases and all": lambda allowed, dtype: torch.from_numpy(
        np.where(allowed.numpy(), 0.0, np.finfo(np.float32).min).astype(np.float32)).to(dtype)
    if dtype == torch.float32 else additive_where(allowed, dtype),
}

ADDITIVE_WRONG = {
    "-inf": (filled_with(NEG_INF), "a plain softmax (and nn.MultiheadAttention with"),
    "-inf by where": (filled_where(NEG_INF), "asks for a FINITE fill"),
    "-1e9 by masked_fill": (filled_with(-1e9), "the blocked entries hold -1e9"),
    "-1e9 by where": (filled_where(-1e9), "not float16, whose range ends near -65504"),
    "-1e9, float16 first": (lambda allowed, dtype: filled_with(-1e9)(allowed, torch.float16),
                            "-1e9 does not fit float16"),
    "float32's finfo.min, converted": (float32_minimum_converted, "overflowed to -inf"),
    "another finite fill": (filled_with(-1e4), "the blocked entries hold -10000"),
    "swapped": (lambda allowed, dtype: filled_with(torch.finfo(dtype).min)(~allowed, dtype),
                "0 and the fill are swapped"),
    "0/1": (lambda allowed, dtype: allowed.to(dtype), "blocks nothing"),
    "0/1 inverted": (lambda allowed, dtype: (~allowed).to(dtype), "MORE likely"),
    "0/-1": (lambda allowed, dtype: -(~allowed).to(dtype), "only lowers a blocked key's"),
    "dtype ignored": (lambda allowed, dtype: filled_with(torch.finfo(torch.float32).min)(
        allowed, torch.float32), "asks for a mask of the queries' dtype, dtype=torch.bfloat16"),
    "where on Python numbers": (lambda allowed, dtype: torch.where(
        allowed, 0.0, torch.finfo(dtype).min), "float32 is the default dtype"),
    "boolean": (lambda allowed, dtype: allowed.clone(), "returned a boolean tensor"),
    "expanded, filled in place": (expanded_in_place, "masked_fill_ wrote into an expanded "
                                                     "tensor"),
    "(T, T) filled in place": (small_in_place, "keeps the shape of the tensor it writes"),
    "writes into allowed": (additive_in_place_on_allowed, "changed its argument `allowed` in "
                                                          "place"),
    "one tensor kept, refilled": (additive_kept(refill=True), "changed the tensor it "
                                                              "returned the first time"),
    "one tensor kept, filled again": (additive_kept(refill=False), "both calls gave back one "
                                                                   "tensor"),
    "1 - allowed": (lambda allowed, dtype: (1 - allowed).to(dtype), "refuses arithmetic"),
    "NaN": (lambda allowed, dtype: torch.full(allowed.shape, float("nan"), dtype=dtype),
            "NaN in the mask"),
    "no return": (lambda allowed, dtype: None, "`return`"),
    "another device": (lambda allowed, dtype: filled_with(torch.finfo(dtype).min)(
        allowed, dtype).to("meta"), "on device 'meta'"),
}

test_additive_right, test_additive_wrong = table_tests(
    check_additive_mask, ADDITIVE_RIGHT, ADDITIVE_WRONG, giveaways=["finfo(dtype).min"])


def test_expanded_filled_in_place_is_also_caught_by_its_values():
    """Without the warning (as under warnings filters that turn it off), the values give
    it away: every sequence blocked wherever any is."""
    def quiet(allowed, dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return expanded_in_place(allowed, dtype)

    feedback = check_additive_mask(quiet)
    assert feedback.status == INCORRECT
    assert ("blocked wherever ANY sequence is" in feedback.message
            or "masked_fill_ wrote into an expanded tensor" in feedback.message)


def test_what_the_fill_messages_say_of_the_dtypes_is_true():
    """-1e9: masked_fill refuses it in float16, torch.where makes it -inf, bfloat16 rounds it
    to -998244352; float32's finfo.min becomes -inf in bfloat16; a row of -inf added to the
    scores gives NaN in a plain softmax and a finite fill does not; SDPA (2.5 and later)
    returns zeros for that row."""
    with pytest.raises(RuntimeError, match="Half without overflow"):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
    assert torch.tensor(-1e9, dtype=torch.float16).item() == NEG_INF
    assert torch.tensor(-1e9, dtype=torch.bfloat16).item() == -998244352
    assert torch.tensor(torch.finfo(torch.float32).min).to(torch.bfloat16).item() == NEG_INF
    assert torch.finfo(torch.float16).min == -65504
    allowed = torch.tensor([[True, False], [False, False]])  # row 1: no allowed key
    scores = torch.tensor([[0.5, 1.0], [2.0, -1.0]])
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        with_inf = torch.zeros(2, 2, dtype=dtype).masked_fill(~allowed, NEG_INF)
        finite = torch.zeros(2, 2, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
        assert torch.isnan(torch.softmax(scores.to(dtype) + with_inf, dim=-1)[1]).all()
        assert torch.isfinite(torch.softmax(scores.to(dtype).float() + finite.float(),
                                            dim=-1)).all()
    q = torch.randn(1, 2, 2, generator=torch.Generator().manual_seed(2))
    eye = torch.eye(2)[None]
    with_inf = torch.zeros(2, 2).masked_fill(~allowed, NEG_INF)
    out = F.scaled_dot_product_attention(q, q, eye, attn_mask=with_inf)
    assert (out[0, 1] == 0).all()  # zeros since 2.5 (the course's floor)


def test_what_the_messages_say_of_a_finite_fill_in_sdpa_is_true():
    """An additive finfo.min mask: rows that keep an allowed key get the boolean mask's
    weights; a row with none is finite, not zero, and puts weight on every key, the future
    included (the correct message and the -inf message say so). float16's row depends on the
    release and kernel (softmax of the raw scores on torch 2.13's CPU): only finite here."""
    generator = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 4, 3, generator=generator), torch.randn(2, 4, 3, generator=generator)
    allowed = causal_mask(4) & padding_mask([4, 2], 4, side="left")[:, None, :]  # (B, T, T)
    empty = ~allowed.any(dim=-1)  # (B, T): rows with no allowed key
    assert empty.any()
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        eye = torch.eye(4, dtype=dtype).expand(2, 4, 4)  # the output is the weights
        additive = torch.zeros(2, 4, 4, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
        by_fill = F.scaled_dot_product_attention(q.to(dtype), k.to(dtype), eye, attn_mask=additive)
        by_bool = F.scaled_dot_product_attention(q.to(dtype), k.to(dtype), eye, attn_mask=allowed)
        assert torch.equal(by_fill[~empty], by_bool[~empty])
        rows = by_fill[empty].float()
        assert torch.isfinite(rows).all()
        if dtype != torch.float16:  # the fill swamps the scores: uniform over every key
            torch.testing.assert_close(rows, torch.full_like(rows, 0.25), atol=2e-3, rtol=0)
    feedback = check_additive_mask(
        lambda allowed, dtype: torch.zeros(allowed.shape, dtype=dtype).masked_fill(
            ~allowed, torch.finfo(dtype).min))
    assert feedback.status == CORRECT and "spreads over every key" in feedback.message


def test_the_additive_cases_cover_every_dtype_and_a_row_with_no_key():
    cases = _additive_cases()
    assert cases[0][1] == torch.float32  # the fill shows as it was written
    assert {dtype for _, dtype, _ in cases} == {torch.float32, torch.bfloat16, torch.float16}
    assert not cases[0][0].any(dim=-1).all()  # the -inf message's rows exist
    assert {allowed.ndim for allowed, _, _ in cases} >= {2, 3, 4}


# ---------------------------------------------------------------- key_padding_mask


def kpm_helpers(lengths, T, side):
    return ~padding_mask(lengths, T, side=side)


def kpm_comparisons(lengths, T, side):
    positions = torch.arange(T)
    counts = torch.tensor(list(map(int, lengths)))[:, None]  # a list or a tensor
    return positions >= counts if side == "right" else positions < T - counts


def kpm_loop(lengths, T, side):
    mask = torch.ones(len(lengths), T, dtype=torch.bool)
    for b, length in enumerate(lengths):
        start = 0 if side == "right" else T - int(length)
        mask[b, start:start + int(length)] = False
    return mask


def kpm_numpy(lengths, T, side):
    counts = np.asarray(lengths)[:, None]
    positions = np.arange(T)
    is_token = positions < counts if side == "right" else positions >= T - counts
    return torch.from_numpy(~is_token)


def is_token_of(lengths, T, side):
    return padding_mask(lengths, T, side=side)


def kpm_from(function):
    """A learner's answer computed from positions (T,) and counts (B, 1) as a tensor."""
    def answer(lengths, T, side):
        return function(torch.arange(T), torch.as_tensor(lengths)[:, None], T, side)
    return answer


def kpm_in_place(lengths, T, side):
    """Right, then it empties the caller's lengths."""
    result = kpm_helpers(lengths, T, side)
    if isinstance(lengths, torch.Tensor):
        lengths.zero_()
    else:
        lengths.clear()
    return result


def kpm_negative_slice(lengths, T, side):
    """Slices each row's tokens: on the left, the last `length` positions, from -length
    (-0: is the whole row)."""
    mask = torch.ones(len(lengths), T, dtype=torch.bool)
    for b, length in enumerate(lengths):
        if side == "left":
            mask[b, -int(length):] = False
        else:
            mask[b, :int(length)] = False
    return mask


KPM_RIGHT = {
    "helpers' padding_mask, inverted": kpm_helpers,
    "arange and comparisons": kpm_comparisons,
    "loop": kpm_loop,
    "NumPy": kpm_numpy,
}

KPM_WRONG = {
    "is_token (True = real token)": (is_token_of, "True at the real tokens is "
                                                  "F.scaled_dot_product_attention's"),
    "side ignored": (lambda lengths, T, side: kpm_helpers(lengths, T, "right"),
                     "padding is on the wrong side"),
    "side swapped and inverted": (lambda lengths, T, side: is_token_of(
        lengths, T, "left" if side == "right" else "right"), "and the padding is on the wrong"),
    "float": (lambda lengths, T, side: kpm_helpers(lengths, T, side).float(),
              "ADDS a float mask"),
    "float 0 and -inf": (lambda lengths, T, side: torch.zeros(len(lengths), T).masked_fill(
        kpm_helpers(lengths, T, side), NEG_INF), "accepts one and adds it to the scores, but"),
    "int": (lambda lengths, T, side: kpm_helpers(lengths, T, side).int(),
            "refuses an integer one"),
    "attn_mask shape": (lambda lengths, T, side: kpm_helpers(lengths, T, side)[:, None, None],
                        "nn.MultiheadAttention adds those axes itself"),
    "transposed": (lambda lengths, T, side: kpm_helpers(lengths, T, side).T,
                   "the positions run down the rows"),
    "notebook's T": (lambda lengths, T, side: kpm_helpers(lengths, 6, side),
                     "expected (B, T) = (3, 5)"),
    "lengths a list": (lambda lengths, T, side: torch.arange(T) >= lengths[:, None]
                       if side == "right" else torch.arange(T) < T - lengths[:, None],
                       "lengths came as a Python list"),
    "lengths without [:, None]": (kpm_from(lambda p, c, T, side: p >= c[:, 0] if side == "right"
                                          else p < T - c[:, 0]), "compared side by side"),
    "> instead of >=": (kpm_from(lambda p, c, T, side: p >= c if side == "right"
                                 else p <= T - c), "real token next to the padding"),
    "<= instead of <": (kpm_from(lambda p, c, T, side: p > c if side == "right"
                                 else p < T - c - 1), "counts as a real token"),
    "left tokens sliced from -length": (kpm_negative_slice, "`x[-0:]` is `x[0:]`"),
    "nothing padded": (lambda lengths, T, side: torch.zeros(len(lengths), T, dtype=torch.bool),
                       "nothing is marked as padding"),
    "changes lengths": (kpm_in_place, "changed its argument `lengths` in place"),
    "no return": (lambda lengths, T, side: None, "`return`"),
    "another device": (lambda lengths, T, side: kpm_helpers(lengths, T, side).to("meta"),
                       "on device 'meta'"),
}


test_kpm_right, test_kpm_wrong = table_tests(check_key_padding_mask, KPM_RIGHT, KPM_WRONG)


@pytest.mark.parametrize("flipped", ["left", "right"])
def test_a_mask_flipped_on_one_side_only_is_said_to_be(flipped):
    def one_side_flipped(lengths, T, side):
        mask = kpm_helpers(lengths, T, side)
        return ~mask if side == flipped else mask

    feedback = check_key_padding_mask(one_side_flipped)
    assert feedback.status == INCORRECT and not feedback.check_failed, feedback.message
    assert f"for side={flipped!r} only, True and False are the wrong way round" in \
        feedback.message


def test_a_mask_flipped_on_both_sides_is_not_said_to_be_one_side_only():
    feedback = check_key_padding_mask(is_token_of)
    assert "True and False are the wrong way round" in feedback.message
    assert "only" not in feedback.message.split("wrong way round")[0]


def test_the_dtype_message_does_not_say_sdpa_refuses_a_float32_mask():
    feedback = check_additive_mask(lambda allowed, dtype: torch.zeros(allowed.shape).masked_fill(
        ~allowed, torch.finfo(torch.float32).min))
    assert feedback.message.count("the exercise asks for a mask of the queries' dtype") == 1
    assert "takes a float32 mask" not in feedback.message


def test_the_cases_pass_lengths_as_lists_and_as_tensors_on_both_sides():
    cases = _padding_cases()
    assert {as_tensor for *_, as_tensor in cases} == {True, False}
    assert {side for _, _, side, _ in cases} == {"left", "right"}
    # a sequence of padding only and one with none on each side (-0: slices everything)
    assert {side for lengths, T, side, _ in cases if 0 in list(lengths)} == {"left", "right"}
    assert {side for lengths, T, side, _ in cases if T in list(lengths)} == {"left", "right"}


def test_what_the_key_padding_messages_say_of_multihead_attention_is_true():
    """True = padding is ignored; a float key_padding_mask is added (1.0 hides nothing);
    a 4-D mask is refused."""
    torch.manual_seed(0)
    module = nn.MultiheadAttention(4, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(3))
    ignored = ~padding_mask([5, 3], 5, side="right")  # (B, T), True at padding
    with torch.no_grad():
        _, weights = module(x, x, x, key_padding_mask=ignored)
        _, added = module(x, x, x, key_padding_mask=ignored.float())
    assert (weights[ignored[:, None, :].expand_as(weights)] == 0).all()
    assert (added > 0).all()  # added to the scores: padding keeps its weight
    with torch.no_grad():  # 0 and -inf: added, it blocks the padding as True does
        _, blocked = module(x, x, x, key_padding_mask=torch.zeros(2, 5).masked_fill(
            ignored, NEG_INF))
    torch.testing.assert_close(blocked, weights)
    with pytest.raises(AssertionError, match="only bool and floating types"):
        module(x, x, x, key_padding_mask=ignored.int())
    with pytest.raises(AssertionError, match="2-D"):
        module(x, x, x, key_padding_mask=ignored[:, None, None])


# ---------------------------------------------------------------- all three

TABLES = {
    check_sdpa_mask: (SDPA_RIGHT, SDPA_WRONG),
    check_additive_mask: (ADDITIVE_RIGHT, ADDITIVE_WRONG),
    check_key_padding_mask: (KPM_RIGHT, KPM_WRONG),
}


@pytest.mark.parametrize("check", list(TABLES), ids=lambda check: check.__name__)
def test_every_check_is_correct_on_the_helpers_way_and_never_raises(check):
    assert check(next(iter(TABLES[check][0].values()))).status == CORRECT
    for strange in (lambda *args: 1 / 0, lambda *args: "mask", lambda *args: torch.tensor(1.0)):
        feedback = check(strange)
        assert feedback.status == INCORRECT and not feedback.check_failed, feedback.message
