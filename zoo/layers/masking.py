"""Masks, masked softmax and guarded pooling, shared by every model.

Everything here is computed in float32, whatever the compute dtype of the caller, so that
mixed-precision training never softmaxes or masks in half precision.
"""

from keras import ops

from zoo.constants import PAD_ID

# Added to the scores of padding positions before a softmax. Large enough to give them exactly zero
# weight in float32, small enough that a row with no real position stays finite (it is then uniform
# and the caller's mask zeroes it).
_NEG = -1e9


def padding_mask(ids):
    """Boolean mask `[B, L]`: True where `ids` is a real token (not PAD)."""
    return ops.not_equal(ids, PAD_ID)


def recurrent_mask(mask):
    """The mask to give a `keras.layers.LSTM`: `mask` `[B, L]` with the first position always real.

    On a TensorFlow GPU the LSTM runs on cuDNN, which asserts that no row of its mask is all False; an
    empty sentence (an empty request string, say) would otherwise stop training or serving there. With
    this mask an empty sentence is read as one padding position. Rows with a real token are unchanged
    (right padding puts it first), so padding still changes no prediction; the real `mask` keeps
    guarding attention and pooling.
    """
    first = ops.expand_dims(ops.equal(ops.arange(ops.shape(mask)[1]), 0), 0)   # [1, L]
    return ops.logical_or(ops.cast(mask, "bool"), first)


def masked_softmax(scores, mask, axis=-1):
    """Softmax over `axis` that gives padding positions exactly zero weight.

    Args:
        scores: float tensor; cast to float32.
        mask: boolean tensor broadcastable to `scores` (True = real position).
        axis: axis to normalise over.

    Returns:
        float32 weights; each row with at least one real position sums to one over the real
        positions. A row with no real position is all zeros (never NaN).
    """
    scores = ops.cast(scores, "float32")
    mask = ops.broadcast_to(mask, ops.shape(scores))
    weights = ops.softmax(ops.where(mask, scores, _NEG), axis=axis)
    return ops.where(mask, weights, 0.0)


def masked_mean(values, mask, axis=1):
    """Mean of `values` `[B, L, D]` over real positions; zeros for an empty sequence (no division by 0)."""
    mask_f = ops.cast(ops.expand_dims(mask, -1), values.dtype)
    total = ops.sum(values * mask_f, axis=axis)
    count = ops.maximum(ops.sum(mask_f, axis=axis), ops.cast(1.0, values.dtype))
    return total / count


def masked_max(values, mask, axis=1):
    """Max of `values` `[B, L, D]` over real positions; zeros for an empty sequence (never -inf)."""
    mask3 = ops.expand_dims(mask, -1)
    lowest = ops.cast(_NEG, values.dtype) if values.dtype == "float32" else ops.cast(-6e4, values.dtype)
    best = ops.max(ops.where(mask3, values, lowest), axis=axis)
    any_real = ops.any(mask3, axis=axis)
    return ops.where(any_real, best, ops.zeros_like(best))


def real_lengths(mask, values=None):
    """Each row's number of real positions, `[B]` int32, from `mask` `[B, L]` (right padding); with no mask,
    every position of `values` `[B, L, ...]` is real."""
    if mask is None:
        return ops.full((ops.shape(values)[0],), ops.shape(values)[1], "int32")
    return ops.sum(ops.cast(mask, "int32"), axis=1)


def last_real(values, mask):
    """The vector at the last real position of each row of `values` `[B, L, D]` (right padding)."""
    index = ops.maximum(real_lengths(mask) - 1, 0)
    return ops.take_along_axis(values, index[:, None, None], axis=1)[:, 0, :]
