"""ESIM's local inference pieces (Chen et al. 2017, §3.2-3.3), shared by ESIM, Luo et al.'s variants and
the tree models: soft alignment both ways, enhancement (m = [x̄; x̃; x̄ − x̃; x̄ ⊙ x̃], Eq. 14-15, formed
without x̄ − x̃ and read by a linear layer whose kernel is folded to match), average + max pooling, and Luo
et al.'s "unmatchedness" of an attention row.

Notation (Chen et al.): ā `[B, La, D]` and b̄ `[B, Lb, D]` are the encoded premise and hypothesis,
e_ij the alignment score of ā_i and b̄_j, ã_i the part of b̄ aligned to ā_i and b̃_j the part of ā aligned
to b̄_j. Softmaxes and masks are float32 (`masked_softmax`); padding rows and columns get zero weight.
"""

import keras
from keras import ops

from zoo.layers.masking import masked_max, masked_mean, masked_softmax
from zoo.layers.serializable import serializable


def dot_scores(a_bar, b_bar):
    """e_ij = ā_i^T b̄_j (Chen et al. Eq. 11): `[B, La, D]`, `[B, Lb, D]` -> `[B, La, Lb]`."""
    return ops.einsum("bid,bjd->bij", a_bar, b_bar)


@serializable
class BilinearScore(keras.layers.Layer):
    """e_ij = ā_i^T W_a b̄_j (Luo et al. Eq. 11), W_a `[D, D]` trainable (identity-initialised, so it
    starts as ESIM's dot product). Call: `(a_bar [B, La, D], b_bar [B, Lb, D]) -> [B, La, Lb]`.

    Masks are the caller's business (`soft_align`); a Keras mask attached to the inputs is dropped
    without a warning (the output has no sequence axis a `[B, La]` mask would describe)."""

    def compute_mask(self, inputs, previous_mask):
        return None

    def build(self, a_bar_shape, b_bar_shape):
        self.kernel = self.add_weight(name="W_a", shape=(a_bar_shape[-1], b_bar_shape[-1]),
                                      initializer="identity")
        self.built = True

    def call(self, a_bar, b_bar):
        return ops.einsum("bid,de,bje->bij", a_bar, self.kernel, b_bar)


def soft_align(scores, a_bar, b_bar, a_mask, b_mask):
    """Soft alignment both ways (Chen et al. Eq. 12-13).

    Args:
        scores: e `[B, La, Lb]`.
        a_bar: ā `[B, La, D]`; b_bar: b̄ `[B, Lb, D]`.
        a_mask, b_mask: boolean `[B, La]`, `[B, Lb]`.

    Returns:
        `(a_tilde [B, La, D], b_tilde [B, Lb, D], weights_a [B, La, Lb], weights_b [B, Lb, La])`:
        `weights_a[i]` is premise word i's distribution over the real hypothesis words (Eq. 12), and
        `weights_b[j]` hypothesis word j's over the real premise words (Eq. 13); rows of padding words
        (and all rows when the other sentence is empty) are zero. Weights are float32.
    """
    pair_mask = ops.logical_and(a_mask[:, :, None], b_mask[:, None, :])           # [B, La, Lb]
    weights_a = masked_softmax(scores, pair_mask, axis=2)                         # (12) [B, La, Lb]
    weights_b = ops.transpose(masked_softmax(scores, pair_mask, axis=1), (0, 2, 1))  # (13) [B, Lb, La]
    a_tilde = ops.einsum("bij,bjd->bid", ops.cast(weights_a, b_bar.dtype), b_bar)  # (12)
    b_tilde = ops.einsum("bji,bid->bjd", ops.cast(weights_b, a_bar.dtype), a_bar)  # (13)
    return a_tilde, b_tilde, weights_a, weights_b


def enhance_folded(bar, tilde):
    """m' = [x̄; x̃; x̄ ⊙ x̃]: m of Eq. 14-15 without x̄ − x̃, for a linear layer whose kernel is folded by
    `fold_enhanced_kernel` (`[B, L, D]` twice -> `[B, L, 3D]`)."""
    return ops.concatenate([bar, tilde, bar * tilde], axis=-1)


def fold_enhanced_kernel(kernel, width):
    """The kernel W `[4D + k, n]` of a linear layer on m = [x̄; x̃; x̄ − x̃; x̄ ⊙ x̃; r] (Eq. 14-15, and any
    k further features r) as W' `[3D + k, n]` on m' = [x̄; x̃; x̄ ⊙ x̃; r] (`enhance_folded`), with W m = W' m'.

    x̄ − x̃ is linear in x̄ and x̃, so W₃ (x̄ − x̃) folds into the others: W' = [W₁ + W₃; W₂ − W₃; W₄; W_r].
    The product then reads three quarters of m's width (ESIM's F: a fifth of its inference products, a
    quarter of them saved), and m' is never written with x̄ − x̃ in it. `width`: D."""
    w1, w2, w3, rest = ops.split(kernel, [width, 2 * width, 3 * width], axis=0)  # one op: its gradient one concat
    return ops.concatenate([w1 + w3, w2 - w3, rest], axis=0)


def folded_dense(layer, width):
    """A function m' (`enhance_folded`) -> `layer(m)`, for a `keras.layers.Dense` built for m (Eq. 14-15 and
    any further features): the same weights, activation and output within float rounding. The kernel is
    folded once, here: make one per forward pass and apply it to both sentences."""
    kernel = fold_enhanced_kernel(ops.convert_to_tensor(layer.kernel), width)        # folded in the weights' dtype

    def apply(m_folded):
        outputs = ops.matmul(m_folded, ops.cast(kernel, m_folded.dtype))
        if layer.use_bias:
            outputs = ops.add(outputs, ops.cast(layer.bias, m_folded.dtype))
        return layer.activation(outputs) if layer.activation is not None else outputs

    return apply


def mean_max_pool(values, mask):
    """[v_ave; v_max] over the real positions (Chen et al. Eq. 18-19): `[B, L, D]` -> `[B, 2D]`.

    Guarded: an empty sentence pools to zeros (never NaN or -inf)."""
    return ops.concatenate([masked_mean(values, mask), masked_max(values, mask)], axis=-1)


def unmatchedness(weights, row_mask, col_mask):
    """Luo et al.'s unmatchedness of each attention row (Eq. 12-14): u_i = 1 / (ℓ · ||w_i||²).

    ℓ is the real length of the sentence attended over. For a real row with ℓ ≥ 1 the weights sum to one
    over ℓ real positions, so ||w_i||² ∈ [1/ℓ, 1] and u_i ∈ [1/ℓ, 1]: 1 exactly for uniform attention
    (no counterpart), 1/ℓ for attention on one word (a strong counterpart).

    Args:
        weights: `[B, Lr, Lc]` rows summing to one over the real columns (e.g. `soft_align`'s weights).
        row_mask: boolean `[B, Lr]`; col_mask: boolean `[B, Lc]`.

    Returns:
        float32 `[B, Lr]`: u at real rows; 0 at padding rows; 1 at real rows when the other sentence is
        empty (nothing to match). The division is guarded, so gradients stay finite.
    """
    weights = ops.cast(weights, "float32")
    length = ops.sum(ops.cast(col_mask, "float32"), axis=1, keepdims=True)        # ℓ [B, 1]
    squared_norm = ops.sum(weights * weights, axis=-1)                              # (13) [B, Lr]
    valid = ops.logical_and(row_mask, length > 0.0)
    denominator = ops.where(valid, length * squared_norm, 1.0)
    u = ops.where(valid, 1.0 / denominator, 1.0)                                    # (14)
    return ops.where(row_mask, u, 0.0)
