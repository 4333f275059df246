"""The papers' equations, step by step in NumPy, against the models (the style of
`tests/test_match_lstm.py::test_mlstm_follows_equations_6_to_8`).

Each reference below is written from the paper's equations, reads the model's own weights (every weight
set to random values first, so that no bias or gate is trivially zero) and runs one sentence pair at a
time over its real tokens only; the model runs on the padded batch. Both must agree within 1e-5. Each
test also checks that a reference with one deliberate mistake (the kind a wrong implementation would
make) does *not* agree, so that the comparison can fail.

Papers: Rocktäschel et al. 2016 (Eq. 1-6 LSTM, §2.2.1 conditional encoding, Eq. 7-10 attention, Eq.
11-14 word-by-word attention, §2.5 two-way); Paria et al. 2016 (Eq. 2-5); Luo, Roman, Tamkin (Eq. 5,
12-15 on top of Chen et al.'s ESIM).
"""

import numpy as np
import pytest

from tests.support import models as tc
from zoo.constants import NULL_ID

ATOL = 1e-5
HIDDEN = 5


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def array(weight):
    return np.asarray(weight, dtype="float64")


def tiny_model(name, seed=0, **extra):
    """A small `name` with every weight drawn at random (moving variances positive)."""
    model = tc.make_model(name, hidden_size=HIDDEN, **extra)
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if "moving_variance" in weight.path:
            weight.assign(rng.uniform(0.5, 1.5, weight.shape).astype("float32"))
        else:
            weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    return model


def explained(model, batch):
    return {k: np.asarray(v) for k, v in model.explain(batch).items()}


def real(ids):
    return ids[ids != 0]


class LSTM:
    """Rocktäschel et al. Eq. 1-6 with a Keras LSTM's weights (gate blocks i, f, c, o)."""

    def __init__(self, layer):
        cell = layer.cell
        self.W, self.U, self.b = array(cell.kernel), array(cell.recurrent_kernel), array(cell.bias)
        self.k = self.U.shape[0]

    def run(self, xs, h=None, c=None):
        """Outputs `[n, k]` over `xs` `[n, d]` and the last cell state, from (h, c) (zeros by default)."""
        k = self.k
        h = np.zeros(k) if h is None else h
        c = np.zeros(k) if c is None else c
        outputs = []
        for x in xs:
            z = x @ self.W + h @ self.U + self.b        # W [x_t; h_{t-1}] + b     (1)
            i, f = sigmoid(z[:k]), sigmoid(z[k:2 * k])   # (2), (3)
            o = sigmoid(z[3 * k:])                        # (4)
            c = f * c + i * np.tanh(z[2 * k:3 * k])      # (5)
            h = o * np.tanh(c)                            # (6)
            outputs.append(h)
        return np.array(outputs), c


def bilstm(layer, xs):
    """A Keras `Bidirectional` LSTM over the real positions `xs` `[n, d]`: `[→h_t; ←h_t]` `[n, 2k]`."""
    forward, _ = LSTM(layer.forward_layer).run(xs)
    backward, _ = LSTM(layer.backward_layer).run(xs[::-1])
    return np.concatenate([forward, backward[::-1]], axis=-1)


# Rocktäschel et al. (2016) ----------------------------------------------------------------------------
class Rocktaschel:
    """Conditional encoding (§2.2.1), attention (Eq. 7-10) and word-by-word attention (Eq. 11-14) in
    NumPy, with a model's weights. `mistake` names one deliberate error (for the can-fail checks)."""

    def __init__(self, model, mistake=None):
        self.model = model
        self.mistake = mistake
        self.table = array(model.embedding.table)
        self.projection = (array(model.projection.kernel), array(model.projection.bias))
        self.premise_lstm = LSTM(model.encoder.premise_lstm)
        self.hypothesis_lstm = LSTM(model.encoder.hypothesis_lstm)
        self.classifier = (array(model.classifier.kernel), array(model.classifier.bias))

    def x(self, ids):
        """Word vectors projected linearly to k (§2.2.1)."""
        return self.table[ids] @ self.projection[0] + self.projection[1]

    def encode(self, premise, hypothesis):
        """Y `[L, k]`, the hypothesis outputs h_1..h_N `[N, k]` (the delimiter step dropped) and h_N."""
        y, c_l = self.premise_lstm.run(self.x(premise))
        c_0 = np.zeros_like(c_l) if self.mistake == "cell_from_zero" else c_l
        # The second LSTM reads the delimiter and the hypothesis, its memory initialised with c_L.
        outputs, _ = self.hypothesis_lstm.run(self.x(np.concatenate([[NULL_ID], hypothesis])), c=c_0)
        return y, outputs[1:], outputs[-1]

    def attention(self, premise, hypothesis):
        """Eq. 7-10: (h*, α `[L]`)."""
        m = self.model
        y, _, h_n = self.encode(premise, hypothesis)
        W_y, W_h, w = array(m.memory_projection.kernel), array(m.query_projection.kernel), array(m.score.w)
        W_p, W_x = array(m.attended_projection.kernel), array(m.last_projection.kernel)
        M = np.tanh(y @ W_y + h_n @ W_h)                                  # (7), W^h h_N ⊗ e_L
        alpha = softmax(M @ w)                                           # (8)
        r = alpha @ y                                                    # (9)
        if self.mistake == "no_last_output":
            return np.tanh(r @ W_p), alpha
        return np.tanh(r @ W_p + h_n @ W_x), alpha                       # (10)

    def word_by_word(self, premise, hypothesis):
        """Eq. 11-14: (h*, α `[N, L]`)."""
        m = self.model
        y, h, h_n = self.encode(premise, hypothesis)
        cell = m.attention_cell
        W_y, W_h, w = array(m.memory_projection.kernel), array(m.query_projection.kernel), array(cell.score.w)
        W_r, W_t = array(cell.recurrent_attention_kernel), array(cell.transition_kernel)
        W_p, W_x = array(m.attended_projection.kernel), array(m.last_projection.kernel)
        r = np.zeros(y.shape[1])                                         # r_0
        alphas = []
        for h_t in h:
            M_t = np.tanh(y @ W_y + (h_t @ W_h + r @ W_r))               # (11)
            alpha = softmax(M_t @ w)                                     # (12)
            if self.mistake == "no_transition":
                r = alpha @ y
            else:
                r = alpha @ y + np.tanh(r @ W_t)                         # (13)
            alphas.append(alpha)
        return np.tanh(r @ W_p + h_n @ W_x), np.array(alphas)            # (14)

    def logits(self, premise, hypothesis, kind):
        """`kind`: "conditional", "attention" or "word_by_word"; two-way models attend both ways (§2.5)."""
        W_c, b_c = self.classifier
        if kind == "conditional":
            features, maps = self.encode(premise, hypothesis)[2], {}
        else:
            attend = self.attention if kind == "attention" else self.word_by_word
            features, alpha = attend(premise, hypothesis)
            maps = {"attention": alpha}
            if self.model.two_way:   # the same weights, the sentences swapped; the two h* concatenated
                reverse, alpha_reverse = attend(hypothesis, premise)
                pair = (reverse, features) if self.mistake == "swapped_halves" else (features, reverse)
                features = np.concatenate(pair)
                maps["attention_reverse"] = alpha_reverse
        # §2.2.1: a softmax layer over a non-linear projection into the three classes; logits before it.
        return np.tanh(features @ W_c + b_c), maps


def check_rocktaschel(name, kind, mistake):
    model = tiny_model(name)
    batch = tc.random_pairs(batch=3, max_premise=6, max_hypothesis=5, seed=4)
    out = explained(model, batch)
    right, wrong = Rocktaschel(model), Rocktaschel(model, mistake)
    wrong_matches = True
    for n in range(3):
        premise, hypothesis = real(batch["premise"][n]), real(batch["hypothesis"][n])
        logits, maps = right.logits(premise, hypothesis, kind)
        np.testing.assert_allclose(out["logits"][n], logits, atol=ATOL)
        for key, alpha in maps.items():
            alpha = alpha.reshape(-1, alpha.shape[-1])                   # attention: one row
            np.testing.assert_allclose(out[key][n, :len(alpha), :alpha.shape[1]], alpha, atol=ATOL)
        wrong_matches &= np.allclose(out["logits"][n], wrong.logits(premise, hypothesis, kind)[0], atol=ATOL)
    assert not wrong_matches, f"a reference with the mistake {mistake!r} agrees with {name}"


@pytest.mark.parametrize("name", ["rocktaschel_conditional", "rocktaschel_conditional_shared"])
def test_conditional_encoding_starts_the_hypothesis_lstm_from_the_premise_cell(name):
    check_rocktaschel(name, "conditional", mistake="cell_from_zero")


def test_attention_follows_equations_7_to_10():
    check_rocktaschel("rocktaschel_attention", "attention", mistake="no_last_output")


def test_word_by_word_attention_follows_equations_11_to_14():
    check_rocktaschel("rocktaschel_wbw", "word_by_word", mistake="no_transition")


@pytest.mark.parametrize("name, kind", [("rocktaschel_attention_two_way", "attention"),
                                        ("rocktaschel_wbw_two_way", "word_by_word")])
def test_two_way_attention_concatenates_both_directions(name, kind):
    check_rocktaschel(name, kind, mistake="swapped_halves")


# Paria et al. (2016) -------------------------------------------------------------------------------------
def paria_reference(model, premise, hypothesis, mistake=None):
    """Paria et al. with bi-LSTM encoders, Eq. 2-5 (attention in the preset's softmax form): logits and
    the operator gates `[2N, k]` of the hypothesis elements."""
    table = array(model.embedding.table)
    W, b = array(model.word_layer.kernel), array(model.word_layer.bias)

    def encode(ids):
        s = sigmoid(table[ids] @ W + b)                                  # σ(W^T w), §IV
        v = bilstm(model.sentence_encoder, s)                            # (v_1 .. v_n) = bi-LSTM(s)
        return np.stack([s, v], axis=1).reshape(-1, s.shape[1])          # (2): (s_1, v_1, ..., s_n, v_n)

    p_e, h_e = encode(premise), encode(hypothesis)
    a = softmax(h_e @ p_e.T)                                             # (3), softmax form
    t = a @ p_e                                                          # t_p = Σ_i a_i P_e^i
    ops = model.operators
    W_1, b_1, W_2, b_2 = (array(w) for w in (ops.w1, ops.b1, ops.w2, ops.b2))
    W_g, b_g = array(ops.gate), array(ops.gate_bias)
    pairs = np.concatenate([t, h_e], axis=-1)                            # [t_p, H_e^p]
    tasks = np.stack([sigmoid(sigmoid(pairs @ W_1[i] + b_1[i]) @ W_2[i] + b_2[i])
                      for i in range(len(W_1))], axis=1)                 # task_i (4) [2N, k, s]
    g = softmax(pairs @ W_g + b_g)                                       # (g_1 .. g_k) (4)
    if mistake == "ungated":
        g = np.full_like(g, 1.0 / g.shape[-1])
    O = np.einsum("pk,pks->ps", g, tasks)  # noqa: E741 (the paper's O)  # O_p = Σ_i g_i task_i (4)
    outputs, _ = LSTM(model.aggregator).run(O)                           # A = lstm(O_1 .. O_m) (5)
    A = outputs[-1]
    bn = model.batch_norm
    A = (array(bn.gamma) * (A - array(bn.moving_mean)) / np.sqrt(array(bn.moving_variance) + bn.epsilon)
         + array(bn.beta))                                               # batch normalisation, §IV
    return A @ array(model.classifier.kernel) + array(model.classifier.bias), g   # softmax(W^T A) (5)


def test_paria_gated_operators_follow_equations_4_and_5():
    model = tiny_model("paria_bilstm", operator_size=4)
    batch = tc.random_pairs(batch=3, max_premise=5, max_hypothesis=4, seed=5)
    out = explained(model, batch)
    wrong_matches = True
    for n in range(3):
        premise, hypothesis = real(batch["premise"][n]), real(batch["hypothesis"][n])
        logits, gates = paria_reference(model, premise, hypothesis)
        np.testing.assert_allclose(out["gates"][n, :len(gates)], gates, atol=ATOL)
        np.testing.assert_allclose(out["logits"][n], logits, atol=ATOL)
        wrong = paria_reference(model, premise, hypothesis, mistake="ungated")[0]
        wrong_matches &= np.allclose(out["logits"][n], wrong, atol=ATOL)
    assert not wrong_matches, "a reference that averages the operators ungated agrees with the model"


# Luo, Roman, Tamkin ------------------------------------------------------------------------------------
def luo_reference(model, premise, hypothesis, mistake=None):
    """Chen et al.'s ESIM with Luo et al.'s "heuristics" features (Eq. 5, 12-15): logits, u_a, u_b."""
    table = array(model.embedding.table)
    a_bar = bilstm(model.input_encoder, table[premise])                  # ā
    b_bar = bilstm(model.input_encoder, table[hypothesis])               # b̄
    e = a_bar @ b_bar.T                                                  # e_ij = ā_i^T b̄_j (10)
    w_a, w_b = softmax(e), softmax(e.T)                                  # (12), and the hypothesis side
    a_tilde, b_tilde = w_a @ b_bar, w_b @ a_bar                          # mimic vectors (3)-(4)
    u_a = 1.0 / (len(hypothesis) * (w_a ** 2).sum(-1))                   # (13)-(14)
    u_b = 1.0 / (len(premise) * (w_b ** 2).sum(-1))

    def features(bar, tilde, u):
        u = u[:, None]
        m = [bar, tilde, bar - tilde, bar * tilde]                       # m (5)
        if mistake == "unmatched_difference":
            return np.concatenate(m + [u * bar, u * (bar - tilde), u * bar * tilde], axis=-1)
        return np.concatenate(m + [u * bar, u * bar - tilde, u * bar * tilde], axis=-1)   # [m; m'] (15)

    W_F, b_F = array(model.projection.kernel), array(model.projection.bias)
    pooled = []
    for bar, tilde, u in ((a_bar, a_tilde, u_a), (b_bar, b_tilde, u_b)):
        v = bilstm(model.composition, np.maximum(features(bar, tilde, u) @ W_F + b_F, 0.0))   # BiLSTM_2(F(m))
        pooled += [v.mean(0), v.max(0)]                                  # (9): average and max pooling
    v = np.concatenate(pooled)
    for layer in model.mlp:                                              # three tanh layers (§3)
        v = np.tanh(v @ array(layer.kernel) + array(layer.bias))
    return v @ array(model.classifier.kernel) + array(model.classifier.bias), u_a, u_b


def test_luo_unmatched_heuristics_follow_equation_15():
    model = tiny_model("luo_unmatched_heuristics")
    batch = tc.random_pairs(batch=3, max_premise=5, max_hypothesis=4, seed=6)
    out = explained(model, batch)
    wrong_matches = True
    for n in range(3):
        premise, hypothesis = real(batch["premise"][n]), real(batch["hypothesis"][n])
        logits, u_a, u_b = luo_reference(model, premise, hypothesis)
        np.testing.assert_allclose(out["unmatchedness_a"][n, :len(premise)], u_a, atol=ATOL)
        np.testing.assert_allclose(out["unmatchedness_b"][n, :len(hypothesis)], u_b, atol=ATOL)
        np.testing.assert_allclose(out["logits"][n], logits, atol=ATOL)
        wrong = luo_reference(model, premise, hypothesis, mistake="unmatched_difference")[0]
        wrong_matches &= np.allclose(out["logits"][n], wrong, atol=ATOL)
    assert not wrong_matches, "a reference with u ⊙ (ā − ã) for u ⊙ ā − ã agrees with the model"
