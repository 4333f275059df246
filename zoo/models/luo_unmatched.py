"""Luo, Roman, Tamkin: matrix attention and "unmatched" attention on top of ESIM."""

from keras import ops

from zoo.layers.alignment import BilinearScore, unmatchedness
from zoo.models.esim import ESIM, ESIM_TRAIN
from zoo.registry import register_model

# §4.2: Adam (lr 0.0004, β1 0.9, β2 0.999), batch size 512, embeddings trained. Dropout and gradient
# clipping are not stated, nor the schedule; "all components other than the attention mechanisms are the
# same as those in Chen et al." (§3), so ESIM's dropout 0.5, its code's clipping at 10 and its
# halve-on-plateau schedule are kept (only the batch size differs).
LUO_TRAIN = {**ESIM_TRAIN, "batch_size": 512}
# §4.2: 300-d GloVe 6B (lowercased words), OOV vectors N(0, 1) samples (standard deviation 1, unlike
# Chen et al.'s released 0.01: the "luo" rule), trained; sentences truncated to 30 words.
LUO_DATA = {"embeddings": "glove-6b-300d", "oov": "luo", "lowercase": True, "max_premise_length": 30,
            "max_hypothesis_length": 30}
_ATTENTION = ("attention", "attention_reverse")


def _preset(bilinear, unmatched):
    # §3: three 300-d tanh layers before the softmax layer.
    return {"hidden_size": 300, "mlp_layers": 3, "dropout": 0.5, "bilinear": bilinear, "unmatched": unmatched}


@register_model("luo_matrix", model=_preset(True, "none"), train=LUO_TRAIN, data=LUO_DATA,
                paper="Luo, Roman, Tamkin, Table 1 'Matrix' (§3.1)", attention=_ATTENTION)
@register_model("luo_unmatched_append", model=_preset(False, "append"), train=LUO_TRAIN, data=LUO_DATA,
                paper="Luo, Roman, Tamkin, Table 1 'Unmatched append' (§3.2)", attention=_ATTENTION)
@register_model("luo_unmatched_heuristics", model=_preset(False, "heuristics"), train=LUO_TRAIN, data=LUO_DATA,
                paper="Luo, Roman, Tamkin, Table 1 'Unmatched heuristics' (§3.2, Eq. 15)",
                attention=_ATTENTION)
class LuoUnmatched(ESIM):
    """ESIM with Luo et al.'s attention changes (the rest as `ESIM`, with `mlp_layers` tanh layers).

    Matrix attention (`bilinear`, Eq. 11):

        e_ij = ā_i^T W_a b̄_j            (W_a initialised to the identity, i.e. ESIM's dot product)

    Unmatchedness (Eq. 12-14), from each premise word's attention row w_ai over the hypothesis:

        u_ai = 1 / (ℓ_b · ||w_ai||²_2) ∈ [1/ℓ_b, 1]       (ℓ_b: real length of the hypothesis)

    and u_b likewise from the hypothesis rows over the premise (`zoo.layers.alignment.unmatchedness`).

    - `unmatched="append"`: m_a ← [m_a; u_a], m_b ← [m_b; u_b] (one more feature per word).
    - `unmatched="heuristics"`: m_a ← [m_a; m'_a] with
      m'_a = [u_a ⊙ ā; u_a ⊙ ā − ã; u_a ⊙ ā ⊙ ã]  (Eq. 15), and m_b likewise.

    Args:
        hidden_size, mlp_layers, dropout: as `ESIM` (presets: 300, three tanh layers, 0.5).
        bilinear: matrix attention (Eq. 11) instead of the dot product.
        unmatched: `"none"`, `"append"` or `"heuristics"`.
        **kwargs: `NLIModel` arguments.

    `explain()` returns ESIM's `attention` / `attention_reverse` and `unmatchedness_a` `[B, Lp]`,
    `unmatchedness_b` `[B, Lh]` (float32; 0 at padding), whatever `unmatched` is (Figure 1's u vector).

    References:
        Vinson Luo, Homero Roman, Alex Tamkin. "Unmatched" Attention for Natural Language Inference.
        Stanford CS224n report.
    """

    def __init__(self, *, hidden_size, mlp_layers, dropout, bilinear, unmatched, **kwargs):
        super().__init__(hidden_size=hidden_size, mlp_layers=mlp_layers, dropout=dropout, **kwargs)
        if unmatched not in ("none", "append", "heuristics"):
            raise ValueError(f"unmatched must be 'none', 'append' or 'heuristics', got {unmatched!r}")
        self.bilinear = bilinear
        self.unmatched = unmatched
        self.bilinear_score = BilinearScore(name="bilinear_score") if bilinear else None

    def scores(self, a_bar, b_bar):
        if self.bilinear_score is None:
            return super().scores(a_bar, b_bar)
        return self.bilinear_score(a_bar, b_bar)                                     # (11)

    def build_scores(self, width):
        if self.bilinear_score is not None:
            self.bilinear_score.build((None, None, width), (None, None, width))     # W_a [2h, 2h] (11)

    def enhanced(self, bar, tilde, weights, mask, other_mask):
        m, _ = super().enhanced(bar, tilde, weights, mask, other_mask)              # m' [B, L, 6h]
        u = unmatchedness(weights, mask, other_mask)                                  # (12)-(14) [B, L] f32
        u3 = ops.cast(u[:, :, None], bar.dtype)                                      # [B, L, 1]
        if self.unmatched == "append":
            m = ops.concatenate([m, u3], axis=-1)                                     # [B, L, 6h + 1]
        elif self.unmatched == "heuristics":
            weighted = u3 * bar
            m = ops.concatenate([m, weighted, weighted - tilde, weighted * tilde], axis=-1)  # (15) [B, L, 12h]
        return m, {"unmatchedness": u}

    def enhanced_size(self, width):
        size = super().enhanced_size(width)                                          # 8h
        if self.unmatched == "append":
            return size + 1                                                          # [m; u]
        if self.unmatched == "heuristics":
            return size + 3 * width                                                  # (15) [m; m']
        return size

    def get_config(self):
        config = super().get_config()
        config.update(bilinear=self.bilinear, unmatched=self.unmatched)
        return config
