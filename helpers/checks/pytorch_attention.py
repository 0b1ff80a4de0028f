"""Checks for notebook 07's exercises: the masks PyTorch's attention functions want. A
``masked_fill`` mask turned into ``F.scaled_dot_product_attention``'s boolean
``attn_mask``; a float (additive) mask of a given dtype, with a finite fill; and
``nn.MultiheadAttention``'s ``key_padding_mask``.

Three conventions meet here, and each check names the one an answer mixed up:

- ``masked_fill(mask, value)`` and ``nn.MultiheadAttention``'s masks: True = blocked
  (``key_padding_mask``: True = padding, to ignore);
- ``F.scaled_dot_product_attention``'s boolean ``attn_mask``: True = may attend;
- a float ``attn_mask``: ADDED to the scores (0 keeps a score, a very negative number
  removes it).

On ``-inf`` in the additive mask: the exercise asks for the dtype's ``finfo.min`` and
the check turns ``-inf`` down, saying why. A query with no allowed key (a padded query
after left padding) gets ``-inf`` on every score; a plain softmax first subtracts the
row's largest score, here ``(-inf) - (-inf)``, which is NaN (notebook 06). With a finite
fill the row stays finite, but not zero: its weights spread over every key, the future
included, so such rows must be ignored (as padded queries are). Rows that keep an
allowed key get the same weights as with a boolean mask.
``F.scaled_dot_product_attention`` returns zeros for a row of ``-inf`` since release
2.5, but a softmax written by hand, older releases and some fused kernels do not
(notebook 07 measured it).
"""

import re

import torch

from helpers.attention import causal_mask, padding_mask
from helpers.checks.feedback import (
    Feedback,
    correct,
    error_text,
    exercise_check,
    incorrect,
    run,
    shape_text,
    tensor_problem,
    with_context,
)

NEG_INF = float("-inf")


def _equal(answer: torch.Tensor, expected: torch.Tensor) -> bool:
    """Same shape and exactly the same values (masks hold no rounding)."""
    return answer.shape == expected.shape and bool(torch.equal(answer, expected))


def _first_wrong(answer, expected, mistakes, fallback: Feedback):
    """None when ``answer`` equals ``expected``, else the Feedback of the first mistake it
    equals, else ``fallback``."""
    if _equal(answer, expected):
        return None
    for wrong, feedback in mistakes:
        if _equal(answer, wrong):
            return feedback
    return fallback


BOOL_MASK_ERRORS = [
    # (words in the error, what the mistake is, hint): found before the course's usual ones
    ("Subtraction, the `-` operator, with a bool tensor is not supported",
     "`1 - mask` inverts a 0/1 number mask, but not a boolean one: PyTorch refuses "
     "arithmetic on booleans",
     "a boolean tensor has its own operator for NOT."),
    ("Boolean value of Tensor with more than one value is ambiguous",
     "Python's `not` (or `and`, `or`, `if`) asks a whole tensor for ONE True or False, "
     "which it cannot give: it works on single values only",
     "a boolean tensor has its own operator for NOT, applied to every element."),
]

# ---------------------------------------------------------------- exercise 1

# (lengths or None, T, H, side): H, the heads of the scores the mask is for, only for the
# messages; B = H in some cases, where a mask without a head axis goes wrong silently.
SDPA_CASES = [([5, 2, 3], 5, 3, "left"), ([4, 2], 4, 4, "right"), (None, 3, 1, "right"),
              ([6, 6, 1, 4], 6, 4, "left"), (None, 7, 2, "right")]


def _sdpa_blocked(lengths, T: int, side: str) -> torch.Tensor:
    """(B, T, T) masked_fill mask, True = blocked: the causal future and the padded keys
    (left padding leaves padded queries with every key blocked)."""
    if lengths is None:  # one sequence, or a pattern that is not causal
        if T == 3:
            return ~causal_mask(T)[None]  # (1, T, T)
        generator = torch.Generator().manual_seed(7)
        allowed = torch.rand(2, T, T, generator=generator) < 0.5
        allowed[..., 0] = True  # every query may see the first key
        return ~allowed  # (2, T, T)
    is_token = padding_mask(lengths, T, side=side)  # (B, T)
    return ~(causal_mask(T) & is_token[:, None, :])  # (B, T, T)


def _head_axis_feedback(shape, B: int, T: int, H: int):
    """Feedback for a boolean mask whose shape is not (B, 1, T, T), else None."""
    shape = tuple(shape)
    scores = f"scores (B, H, T, T) = {shape_text((B, H, T, T))}"
    if shape == (B, T, T):
        if B == H:
            happens = (f"Here B = H = {B}: it broadcasts without an error, and head h of "
                       "every sequence gets the mask of sequence h")
        else:
            happens = (f"Here B = {B} and H = {H}: SDPA raises an error, as the sizes do not "
                       "match (when B = H it would broadcast silently instead, head h of "
                       "every sequence getting the mask of sequence h)")
        return incorrect(
            f"shape (B, T, T) = {shape_text(shape)} has no axis for the heads. Against "
            f"{scores}, shapes line up from the RIGHT, so the mask's B falls on the heads "
            f"axis. {happens}", "the mask needs a dimension of size 1 for the heads, "
                                "between B and the queries.")
    if shape == (1, B, T, T) and B > 1:
        return incorrect(
            f"shape (1, B, T, T) = {shape_text(shape)}: the size-1 axis came before the "
            f"batch axis, so lined up with {scores} the sequences fall on the heads",
            "the batch stays first; the new axis goes right after it.")
    if shape == (B, T, 1, T) and T > 1:
        return incorrect(
            f"shape (B, T, 1, T) = {shape_text(shape)}: the size-1 axis sits between the "
            f"queries and the keys, so lined up with {scores} the queries fall on the heads "
            "and one row of the mask serves every query", "the new axis goes right after "
                                                          "the batch.")
    if shape != (B, 1, T, T):
        return incorrect(f"sdpa_mask returned shape {shape_text(shape)}, expected (B, 1, T, "
                         f"T) = {shape_text((B, 1, T, T))}", "the mask keeps blocked's sizes "
                                                             "and gains a size-1 axis for the "
                                                             "heads.")
    return None


def _not_boolean(answer: torch.Tensor, name: str, used_by: str, meaning: str) -> Feedback:
    """Feedback for a mask that is not boolean, saying what ``used_by`` would do with it."""
    returned = f"{name} returned a {answer.dtype} tensor"
    if not answer.is_floating_point():
        return incorrect(f"{returned}: {used_by} takes a boolean or a float mask, and refuses "
                         "an integer one", "a comparison gives a boolean tensor.")
    if (answer.detach() < 0).any():  # 0 and -inf, or a very negative number
        return incorrect(
            f"{returned} of 0 and negative values: an additive mask. {used_by} accepts one "
            f"and adds it to the scores, but this exercise asks for the boolean form, "
            f"{meaning}", "build the boolean mask (a comparison, `~`); exercise 2 is the "
                          "float one.")
    return incorrect(f"{returned}: {used_by} ADDS a float mask to the scores, so 0.0 and 1.0 "
                     "block nothing", "a comparison gives a boolean tensor; nothing needs "
                                      "converting.")


SDPA_TRUE_HINT = ("masked_fill wants True where a query may NOT attend; "
                  "F.scaled_dot_product_attention wants True where it MAY.")


@exercise_check("two changes: which way True points (masked_fill's True means blocked, "
                "F.scaled_dot_product_attention's boolean True means may attend), and a "
                "dimension of size 1 for the heads, so that (B, ., T, T) lines up with "
                "scores (B, H, T, T). Keep it boolean, and leave `blocked` as it is.")
def check_sdpa_mask(sdpa_mask) -> Feedback:
    """Exercise: sdpa_mask(blocked (B, T, T), True = blocked) -> (B, 1, T, T), True = may
    attend."""
    name = "sdpa_mask"
    for lengths, T, H, side in SDPA_CASES:
        blocked = _sdpa_blocked(lengths, T, side)
        B = blocked.shape[0]
        on = f"for blocked of shape {shape_text(blocked.shape)}, scores with H = {H} heads"
        outcome = run(sdpa_mask, name, {"blocked": blocked}, extra_errors=BOOL_MASK_ERRORS)
        if outcome.failed:
            return with_context(outcome.failed, on)
        answer = outcome.answer
        expected = (~blocked)[:, None]  # (B, 1, T, T)
        problem = tensor_problem(answer, name, expected, kind=None, shape=False)
        if problem:
            return with_context(problem, on)
        if answer.dtype != torch.bool:
            return with_context(_not_boolean(answer, name, "F.scaled_dot_product_attention",
                                             "True = may attend"), on)
        wrong = _head_axis_feedback(answer.shape, B, T, H)
        if wrong:
            return with_context(wrong, on)
        wrong = _first_wrong(answer.detach(), expected, [
            (blocked[:, None], incorrect(
                "True and False are the wrong way round: this is `blocked` itself with a head "
                "axis. F.scaled_dot_product_attention reads a boolean True as \"may attend\", "
                "the opposite of masked_fill's True (\"blocked\"), so each query would attend "
                "to exactly what it must not see", SDPA_TRUE_HINT)),
            (torch.ones_like(expected), incorrect("everything is allowed: the mask blocks "
                                                  "nothing", "the answer comes from "
                                                             "`blocked`.")),
        ], incorrect("not the mask blocked stands for: True exactly where `blocked` is False",
                     "print your mask and `blocked` for one sequence side by side."))
        if wrong:
            return with_context(wrong, on)
    return correct("a boolean (B, 1, T, T) mask, True where a query may attend, which "
                   "broadcasts over the heads of (B, H, T, T) scores, whether B = H or not.")


# ---------------------------------------------------------------- exercise 2


def _additive_cases():
    """(allowed, dtype, what): float32 first (the fill shows as it was written), then the
    half-precision dtypes; masks of 4, 2 and 3 dimensions; rows with no allowed key."""
    left = padding_mask([5, 2], 5, side="left")  # (B, T)
    padded = causal_mask(5) & left[:, None, None, :]  # (B, 1, T, T): 3 rows with no key
    generator = torch.Generator().manual_seed(70)
    pattern = torch.rand(3, 4, 4, generator=generator) < 0.6  # (B, T, T), not causal
    pattern[1, 2] = False  # one row with no key
    keys = padding_mask([6, 3, 1], 6, side="right")[:, None, None, :]  # (B, 1, 1, T)
    return [
        (padded, torch.float32, "allowed (2, 1, 5, 5), causal and left padding, float32"),
        (causal_mask(4), torch.bfloat16, "allowed (4, 4), causal, bfloat16"),
        (pattern, torch.float16, "allowed (3, 4, 4), not causal, float16"),
        (keys, torch.bfloat16, "allowed (3, 1, 1, 6), padded keys only, bfloat16"),
        (causal_mask(3), torch.float16, "allowed (3, 3), causal, float16"),
    ]


FILL_HINT = ("the fill must be finite AND the most negative number the dtype asked for can "
             "hold: torch.finfo tells each dtype's range.")
FLOAT16_OVERFLOW = (
    "cannot be converted to type c10::Half without overflow",
    "-1e9 does not fit float16 (its range ends near -65504), and masked_fill refuses to "
    "write a number the tensor's dtype cannot hold. bfloat16 holds it only rounded "
    "(-998244352), and torch.where would make it -inf without a word",
    FILL_HINT)
IN_PLACE_SHAPE = (
    "doesn't match the broadcast shape",
    "an in-place operation (a method ending in `_`) keeps the shape of the tensor it writes "
    "into, so a smaller tensor, (T, T) say, cannot take the fill of a larger mask",
    "build the result out of place, as a new tensor of allowed's full shape. (The reference "
    "code in F.scaled_dot_product_attention's documentation fills a (T, T) tensor in place: "
    "it works for one (T, T) mask only.)")
EXPANDED_WARNING = "on expanded tensors is deprecated"
ADDED_HINT = ("the mask is added to a score: which number, added, leaves the exponential of "
              "any score as good as 0, in every dtype?")


def _expected_additive(allowed: torch.Tensor, dtype) -> torch.Tensor:
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


def _no_key_rows(allowed: torch.Tensor) -> int:
    return int((~allowed.any(dim=-1)).sum())


def _fill_feedback(values: torch.Tensor, allowed: torch.Tensor, dtype, first: bool):
    """Feedback for a mask of the right dtype and shape whose blocked entries hold one
    value other than finfo.min (0 at the allowed entries), else None."""
    blocked = values[(~allowed).expand(values.shape)]
    kept = values[allowed.expand(values.shape)]
    if blocked.numel() == 0 or (kept != 0).any() or not (blocked == blocked[0]).all():
        return None
    fill = blocked[0].item()
    minimum = torch.finfo(dtype).min
    if fill == minimum:
        return None
    if fill == NEG_INF:
        if not first:  # the float32 case was right: finfo.min of another dtype, converted
            return incorrect(
                f"in {dtype} the blocked entries are -inf: the fill is the finfo.min of "
                f"another dtype (float32's, {torch.finfo(torch.float32).min:.4g}, say), "
                f"beyond {dtype}'s range, so it overflowed to -inf when converted",
                "take the range of the dtype asked for, not of the one you computed in.")
        rows = _no_key_rows(allowed)
        return incorrect(
            "the blocked entries hold -inf; this exercise asks for a FINITE fill. A query with "
            f"no allowed key ({rows} rows here) gets -inf on every score, and a plain softmax "
            "(and nn.MultiheadAttention with need_weights=True) makes NaN of such a row, which "
            "spreads to everything it touches",
            FILL_HINT + " A finite fill keeps such a row finite (not zero: its weights spread "
            "over every key, so it must still be ignored). F.scaled_dot_product_attention "
            "returns zeros for a row of -inf since release 2.5; a softmax by hand, older "
            "releases and some fused kernels give NaN.")
    if fill == 1.0 or fill == -1.0:
        return None  # a 0/1 mask: said by the mistakes
    if abs(fill + 1e9) < 1e3:  # -1e9 (float32 holds it exactly)
        return incorrect(
            "the blocked entries hold -1e9, a number picked by hand: it fits float32 but "
            "not float16, whose range ends near -65504 (masked_fill refuses it there, "
            "torch.where silently makes it -inf), and bfloat16 rounds it to "
            "-998244352. The fill must be the dtype's own most negative finite number",
            FILL_HINT)
    return incorrect(f"the blocked entries hold {fill:.6g}; expected the most negative "
                     f"finite number of {dtype}, {minimum:.6g}", FILL_HINT)


def _additive_mistakes(allowed, dtype, expected):
    minimum = torch.finfo(dtype).min
    shape = expected.shape
    as_float = allowed.expand(shape).to(dtype)
    mistakes = [
        (torch.zeros(shape, dtype=dtype).masked_fill(allowed, minimum), incorrect(
            "0 and the fill are swapped: the fill went where a query MAY attend, so it "
            "attends only to what it must not see", "`allowed` is True where a query may "
                                                    "attend: those scores keep their value, "
                                                    "+0.")),
        (as_float, incorrect(
            "this is 1.0 where allowed and 0.0 where blocked: the boolean mask as numbers. A "
            "float mask is ADDED to the scores, so +1 on the allowed keys and +0 on the "
            "blocked ones blocks nothing (a blocked key keeps its weight)", ADDED_HINT)),
        (1.0 - as_float, incorrect(
            "this is 0.0 where allowed and 1.0 where blocked: added to the scores, +1 makes "
            "the blocked keys MORE likely, and blocks nothing", ADDED_HINT)),
        (-(1.0 - as_float), incorrect(
            "this is 0.0 where allowed and -1.0 where blocked: added to the scores, -1 "
            "only lowers a blocked key's weight (by a factor e); it does not remove it",
            ADDED_HINT)),
    ]
    if allowed.ndim > 2 and allowed.shape[0] > 1:  # one (.., T, T) memory filled for all
        union = (~allowed).any(dim=0, keepdim=True).expand(allowed.shape)
        mistakes.append((torch.zeros(shape, dtype=dtype).masked_fill(union, minimum),
                         incorrect(
            "each sequence is blocked wherever ANY sequence is: the mask was filled in "
            "place in a tensor expanded from one smaller memory (expand makes views of the "
            "same memory), so every fill lands in every sequence",
            "build the result out of place, as a new tensor of the full shape.")))
    return mistakes


def _additive_feedback(answer, allowed, dtype, name, warned, first):
    expected = _expected_additive(allowed, dtype)
    problem = tensor_problem(answer, name, expected, kind=None, shape=False)
    if problem:
        return problem
    if answer.dtype == torch.bool:
        return incorrect(f"{name} returned a boolean tensor: that is the boolean attn_mask. "
                         f"This exercise asks for the float one, of dtype={dtype}, added to "
                         "the scores", "0.0 where allowed, a very negative number where "
                                       "not.")
    if answer.dtype != dtype:
        default = (" float32 is the default dtype: what torch.zeros without dtype=, or "
                   "torch.where on Python numbers, gives." if answer.dtype == torch.float32
                   else "")
        return incorrect(
            f"the exercise asks for a mask of the queries' dtype, dtype={dtype}, with a fill "
            f"that dtype can hold; {name} returned a {answer.dtype} tensor.{default}",
            "make the result in the dtype asked for, and take the fill from that dtype.")
    if tuple(answer.shape) != tuple(expected.shape):
        return incorrect(f"{name} returned shape {shape_text(answer.shape)}, expected the "
                         f"shape of `allowed`, {shape_text(expected.shape)}",
                         "the mask keeps allowed's shape, whatever its number of "
                         "dimensions.")
    values = answer.detach()
    if torch.isnan(values).any():
        return incorrect("NaN in the mask: added to the scores, it makes every weight of its "
                         "row NaN", "a mask holds only 0 and the fill.")
    if any(EXPANDED_WARNING in message for message in warned):
        return incorrect(
            "the values are right, but masked_fill_ wrote into an expanded tensor, which "
            "PyTorch warns is deprecated: expand makes views of ONE memory, so as soon as "
            "two sequences differ each fill lands in all of them",
            "build the result out of place, as a new tensor of the full shape.")
    if _equal(values, expected):
        return None
    wrong = _fill_feedback(values, allowed, dtype, first)
    if wrong:
        return wrong
    return _first_wrong(values, expected, _additive_mistakes(allowed, dtype, expected),
                        incorrect("not the additive mask: 0.0 exactly where `allowed` is "
                                  "True, the fill exactly where it is False",
                                  "print your mask and `allowed` side by side."))


@exercise_check("a float tensor of allowed's shape and the dtype asked for: 0.0 where a query "
                "may attend, and where it may not the most negative FINITE number that dtype "
                "holds (not -1e9, which float16 cannot hold; not -inf, which makes rows with "
                "no allowed key NaN in a plain softmax). Build it as a new tensor.")
def check_additive_mask(additive_mask) -> Feedback:
    """Exercise: additive_mask(allowed (any shape, True = may attend), dtype) -> float mask
    of that dtype: 0.0 where allowed, finfo(dtype).min where not."""
    name = "additive_mask"
    for index, (allowed, dtype, what) in enumerate(_additive_cases()):
        on = f"for {what}"
        outcome = run(additive_mask, name, {"allowed": allowed, "dtype": dtype},
                      extra_errors=[FLOAT16_OVERFLOW, IN_PLACE_SHAPE, *BOOL_MASK_ERRORS])
        if outcome.failed:
            return with_context(outcome.failed, on)
        wrong = _additive_feedback(outcome.answer, allowed, dtype, name, outcome.warned,
                                   first=index == 0)
        if wrong:
            return with_context(wrong, on)
    reused = _reused_result(additive_mask, name)
    if reused:
        return reused
    return correct("0.0 where allowed and the dtype's most negative finite number elsewhere, "
                   "in float32, bfloat16 and float16, for masks of 2 to 4 dimensions. Rows "
                   "with an allowed key get the boolean mask's weights; a row with none stays "
                   "finite but spreads over every key, so ignore such rows (as padded "
                   "queries are).")


def _reused_result(additive_mask, name: str):
    """Feedback when a second call, same shape and dtype but another pattern, changes what
    the first call returned (one tensor kept and filled again), else None."""
    dtype = torch.float16
    patterns = [causal_mask(4), causal_mask(4).T]  # the past, then the future, allowed
    answers = []
    for allowed in patterns:
        outcome = run(additive_mask, name, {"allowed": allowed, "dtype": dtype})
        if outcome.failed:
            return with_context(outcome.failed, "for a second call")
        answers.append(outcome.answer)
    first = torch.zeros(4, 4, dtype=dtype).masked_fill(~patterns[0], torch.finfo(dtype).min)
    if _equal(answers[0], first):
        return None
    return incorrect(
        f"called twice with (4, 4) float16 masks, {name} changed the tensor it returned the "
        "first time: both calls gave back one tensor, filled again. A mask kept and passed to "
        "a model changes under it", "build a new tensor on every call.")


# ---------------------------------------------------------------- exercise 3


def _padding_cases():
    """(lengths, T, side, as_tensor): both sides, unsorted lengths, a sequence of padding
    only and one with none on each side, lengths as a list and as a tensor."""
    return [([4, 1, 3], 5, "left", False), ([2, 5], 5, "right", True),
            ([3, 7, 1, 6], 8, "left", True), ([1], 3, "right", False),
            ([4, 0, 4], 4, "right", False), ([2, 0, 3], 3, "left", True)]


def _key_padding_mistakes(lengths, T: int, side: str):
    is_token = padding_mask(lengths, T, side=side)  # (B, T): True at real tokens
    expected = ~is_token
    other = "left" if side == "right" else "right"
    positions, counts = torch.arange(T), torch.tensor(lengths)[:, None]  # (T,), (B, 1)
    if side == "left":
        token_lost, padding_gained = positions > T - counts, positions >= T - counts - 1
    else:
        token_lost, padding_gained = positions < counts - 1, positions <= counts
    edge_hint = ("write out which positions hold the tokens of a sequence of length 2 padded "
                 "to T = 5, on each side, and test your comparison where padding and tokens "
                 "meet.")
    return expected, [
        (is_token, incorrect(
            "True and False are the wrong way round: True at the real tokens is "
            "F.scaled_dot_product_attention's convention (True = may attend) and the padding "
            "mask's. nn.MultiheadAttention's key_padding_mask is True at PADDING, the keys to "
            "ignore", "key_padding_mask says which keys to ignore.")),
        (~padding_mask(lengths, T, side=other), incorrect(
            f"the padding is on the wrong side: side={side!r} puts it "
            f"{'after' if side == 'right' else 'before'} the tokens",
            "draw one padded sequence for each side.")),
        (padding_mask(lengths, T, side=other), incorrect(
            "True and False are the wrong way round (True must mark padding), and the padding "
            f"is on the wrong side (side={side!r})", "key_padding_mask says which keys to "
                                                     "ignore; draw one padded sequence for "
                                                     "each side.")),
        (~token_lost, incorrect(
            "off by one where the padding meets the tokens: each sequence's real token next "
            "to the padding is marked as padding (a strict comparison where a non-strict one "
            "was needed, or the reverse)", edge_hint)),
        (~padding_gained, incorrect(
            "off by one where the padding meets the tokens: the padded position next to each "
            "sequence's tokens counts as a real token", edge_hint)),
        (expected & (counts != 0), incorrect(
            "a sequence of padding only (length 0) has no padding marked: `x[-0:]` is "
            "`x[0:]`, every position, since -0 is 0",
            "slice from T - length, not from -length, or compare positions with the "
            "lengths.")),
        (torch.zeros_like(expected), incorrect("nothing is marked as padding",
                                               "the padding comes from the lengths.")),
    ]


def _lengths_error(error: BaseException, lengths, T: int, as_tensor: bool):
    """Feedback for the errors of lengths used as a list, or of positions (T,) and lengths
    (B,) side by side; None for other errors."""
    text, B = str(error), len(lengths)
    if not as_tensor and isinstance(error, TypeError) and ("'list'" in text
                                                           or "list indices" in text):
        return incorrect(
            f"key_padding_mask raised TypeError: {error_text(error)}. That is: lengths came "
            "as a Python list here (the check passes a list in some cases, a tensor in "
            "others), and a list does no arithmetic and takes one index at a time",
            "make a tensor of the lengths first, in a way that works for a list and for a "
            "tensor alike.")
    sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
                      text)
    if sizes and {int(sizes.group(1)), int(sizes.group(2))} == {B, T} and B != T:
        return incorrect(
            f"key_padding_mask raised {type(error).__name__}: {error_text(error)}. That is: "
            f"the T = {T} positions, shape (T,), and the B = {B} lengths, shape (B,), were "
            "compared side by side, and two 1-D tensors of different sizes do not broadcast. "
            "The mask is (B, T): one row of T positions for each sequence",
            "the lengths must run down the rows, the positions along the columns.")
    return None


def _one_side_flipped(key_padding_mask, answer, lengths, T: int, side: str, as_tensor: bool):
    """Feedback when ``answer`` is True at the real tokens for ``side`` while the same
    lengths on the other side give the right mask, else None."""
    if not _equal(answer.detach(), padding_mask(lengths, T, side=side)):
        return None
    other = "left" if side == "right" else "right"
    given = torch.tensor(lengths) if as_tensor else list(lengths)
    outcome = run(key_padding_mask, "key_padding_mask", {"lengths": given, "T": T,
                                                         "side": other})
    if outcome.failed or not isinstance(outcome.answer, torch.Tensor):
        return None
    if not _equal(outcome.answer.detach(), ~padding_mask(lengths, T, side=other)):
        return None
    return incorrect(
        f"for side={side!r} only, True and False are the wrong way round (side={other!r} "
        f"gives the right mask): with side={side!r} the mask is True at the real tokens. "
        "nn.MultiheadAttention's key_padding_mask is True at PADDING, the keys to ignore, "
        "on either side", f"compare what your code does for side={side!r} with what it does "
                          f"for side={other!r}.")


@exercise_check("a (B, T) boolean tensor, True at the PADDING (the keys nn.MultiheadAttention "
                "must ignore), False at the real tokens: torch.arange(T) compared with the "
                "lengths, one row per sequence, on the side asked for. lengths may come as a "
                "list or as a tensor.")
def check_key_padding_mask(key_padding_mask) -> Feedback:
    """Exercise: key_padding_mask(lengths, T, side) -> (B, T) boolean, True = padding."""
    name = "key_padding_mask"
    for lengths, T, side, as_tensor in _padding_cases():
        given = torch.tensor(lengths) if as_tensor else list(lengths)
        kind = "a tensor" if as_tensor else "a list"
        on = f"for lengths={lengths} ({kind}), T={T}, side={side!r}"
        outcome = run(key_padding_mask, name, {"lengths": given, "T": T, "side": side},
                      extra_errors=BOOL_MASK_ERRORS)
        if outcome.failed:
            if outcome.error is not None and not isinstance(outcome.error,
                                                            NotImplementedError):
                outcome.failed = (_lengths_error(outcome.error, lengths, T, as_tensor)
                                  or outcome.failed)
            return with_context(outcome.failed, on)
        answer = outcome.answer
        expected, mistakes = _key_padding_mistakes(lengths, T, side)
        B = len(lengths)
        problem = tensor_problem(answer, name, expected, kind=None, shape=False)
        if problem:
            return with_context(problem, on)
        if answer.dtype != torch.bool:
            return with_context(_not_boolean(answer, name, "nn.MultiheadAttention",
                                             "True = padding"), on)
        shape = tuple(answer.shape)
        if shape in ((B, 1, 1, T), (B, 1, T)):
            return with_context(incorrect(
                f"shape {shape_text(shape)} is an attn_mask's, ready to broadcast over heads "
                f"and queries; key_padding_mask is (B, T) = {shape_text((B, T))}: "
                "nn.MultiheadAttention adds those axes itself", "one row per sequence, one "
                                                                "column per position."), on)
        if shape == (T, B) and B != T:
            return with_context(incorrect(
                f"shape (T, B) = {shape_text(shape)}: the positions run down the rows; "
                f"key_padding_mask is (B, T) = {shape_text((B, T))}, one row per sequence",
                "the lengths run down the rows, the positions along the columns."), on)
        if shape != (B, T):
            return with_context(incorrect(
                f"{name} returned shape {shape_text(shape)}, expected (B, T) = "
                f"{shape_text((B, T))}", "one row per sequence, one column per position; "
                                         "take T from the argument."), on)
        wrong = _one_side_flipped(key_padding_mask, answer, lengths, T, side, as_tensor)
        if wrong:
            return with_context(wrong, on)
        wrong = _first_wrong(answer.detach(), expected, mistakes, incorrect(
            "not the key padding mask: True exactly at each sequence's padded positions",
            "print your mask for one short sequence on each side."))
        if wrong:
            return with_context(wrong, on)
    return correct("a (B, T) boolean key_padding_mask, True at the padding, for both sides, "
                   "with lengths as a list or as a tensor.")
