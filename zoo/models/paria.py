"""Paria et al. (2016): attention over phrase encodings, soft-gated operators and LSTM aggregation."""

import keras
from keras import ops

from zoo.layers.masking import masked_softmax, recurrent_mask
from zoo.layers.recurrent import bidirectional_lstm
from zoo.layers.serializable import serializable
from zoo.layers.tree_lstm import BinaryTreeLSTM, complete_tree, interleave, node_mask, num_levels
from zoo.models.base import NLIModel
from zoo.registry import register_model

ENCODERS = ("bilstm", "btree")
ATTENTIONS = ("softmax", "normalized")
# Table I: batch size 40; §IV: Adam (no learning rate given: Keras' default).
PARIA_TRAIN = {"optimizer": "adam", "learning_rate": 1e-3, "batch_size": 40}
# Table I: sequence length 64. §IV: word2vec vectors, lowercased, not trained; OOV words get random
# N(0, 0.06) vectors, also frozen: the "paria" strategy (zoo/data/embeddings.py reads 0.06 as the variance).
PARIA_DATA = {"embeddings": "word2vec-google-news-300", "oov": "paria", "lowercase": True,
              "max_premise_length": 64, "max_hypothesis_length": 64}
_EPSILON = 1e-6


@serializable
class GatedOperators(keras.layers.Layer):
    """Paria et al. Eq. 4: k operators, each a two-layer sigmoid network, mixed by a softmax gate.

        task_i(t, h) = σ(W_2^i σ(W_1^i [t; h] + b_1^i) + b_2^i)
        (g_1 .. g_k) = softmax(W [t; h] + b)
        O = Σ_i g_i task_i(t, h)

    All k operators run at once as einsums over stacked weights `W_1 [k, d, s]`, `W_2 [k, s, s]`.
    Call: `pairs [B, N, d] -> (O [B, N, s], gates [B, N, k])`.

    Args:
        num_operators: k (11).
        units: s, the size of both layers of every operator.
    """

    def __init__(self, num_operators, units, **kwargs):
        super().__init__(**kwargs)
        self.num_operators = int(num_operators)
        self.units = int(units)

    def build(self, input_shape):
        k, d, s = self.num_operators, input_shape[-1], self.units
        # Glorot-uniform per operator (Keras' GlorotUniform would count the stacked axis k in the fans).
        glorot = lambda fan_in, fan_out: keras.initializers.RandomUniform(  # noqa: E731
            -(6.0 / (fan_in + fan_out)) ** 0.5, (6.0 / (fan_in + fan_out)) ** 0.5)
        self.w1 = self.add_weight(name="W_1", shape=(k, d, s), initializer=glorot(d, s))
        self.b1 = self.add_weight(name="b_1", shape=(k, s), initializer="zeros")
        self.w2 = self.add_weight(name="W_2", shape=(k, s, s), initializer=glorot(s, s))
        self.b2 = self.add_weight(name="b_2", shape=(k, s), initializer="zeros")
        self.gate = self.add_weight(name="W_gate", shape=(d, k), initializer=glorot(d, k))
        self.gate_bias = self.add_weight(name="b_gate", shape=(k,), initializer="zeros")
        self.built = True

    def call(self, pairs):
        hidden = ops.sigmoid(ops.einsum("bnd,kds->bnks", pairs, self.w1) + self.b1)      # [B, N, k, s]
        tasks = ops.sigmoid(ops.einsum("bnks,kst->bnkt", hidden, self.w2) + self.b2)     # task_i [B, N, k, s]
        gates = ops.softmax(ops.cast(ops.einsum("bnd,dk->bnk", pairs, self.gate) + self.gate_bias,
                                     "float32"), axis=-1)                                # g [B, N, k]
        return ops.einsum("bnk,bnks->bns", ops.cast(gates, tasks.dtype), tasks), gates   # O [B, N, s]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,), tuple(input_shape[:-1]) + (self.num_operators,)

    def get_config(self):
        config = super().get_config()
        config.update(num_operators=self.num_operators, units=self.units)
        return config


def normalized_attention(scores, mask):
    """Paria et al. Eq. 3 as published: a_i = s_i / Σ_j s_j over the real positions (s_i = P_i^T H_p).

    Rows sum to one, but the weights may be negative and the denominator may vanish: it is kept at
    least 1e-6 away from zero (same sign), so rows stay finite (and then need not sum to one);
    padding positions and rows with no real position get zero weight. float32.
    """
    scores = ops.where(mask, ops.cast(scores, "float32"), 0.0)
    total = ops.sum(scores, axis=-1, keepdims=True)
    total = ops.where(ops.greater_equal(total, 0.0), ops.maximum(total, _EPSILON), ops.minimum(total, -_EPSILON))
    return scores / total


@register_model("paria_bilstm",
                model={"hidden_size": 300, "encoder": "bilstm", "num_operators": 11, "operator_size": 100,
                       "attention": "softmax", "max_depth": 6},
                train=PARIA_TRAIN, data=PARIA_DATA,
                paper="Paria et al. 2016, Table II 'Our model with bi-LSTM encoders' (Table I settings)",
                paper_params=6_000_000, attention=("attention",))
@register_model("paria_btree",
                model={"hidden_size": 300, "encoder": "btree", "num_operators": 11, "operator_size": 100,
                       "attention": "softmax", "max_depth": 6},
                train=PARIA_TRAIN, data=PARIA_DATA,
                paper="Paria et al. 2016, Table II 'Our model with btree-LSTM encoders' (Table I settings)",
                paper_params=2_000_000, attention=("attention",))
class Paria(NLIModel):
    """The model of Paria et al. (2016), §III, with bi-LSTM or btree-LSTM encoders.

    Each sentence S (premise P, hypothesis H), with word vectors w_t:

        s_t = σ(W^T w_t + b)                                   the learned word layer (§IV)
        (v_1 .. v_n) = bi-LSTM(s)      S_e = (s_1, v_1, ..., s_n, v_n)                     (2)
        or (v_1 .. v_2n-1) = btree-LSTM(s)   S_e = (v_1, ..., v_2n-1)   (complete binary tree)
        a_i = P_e^i·H_e^p / Σ_j P_e^j·H_e^p,   t_p = Σ_i a_i P_e^i     for every element p of H_e (3)
        O_p = Σ_k g_k task_k(t_p, H_e^p),  g = softmax(W [t_p; H_e^p])   11 operators        (4)
        A = LSTM(O_1, ..., O_m),   label = softmax(W^T BN(A))                                (5)

    Attention (Eq. 3): the published normalised dot product is not a distribution (dot products of
    tanh/sigmoid vectors can be negative, and their sum can vanish). `attention="softmax"` (the preset)
    uses softmax_i(P_e^i·H_e^p) instead, the form the paper's "Σ_j v_ij = 1" and "high for aligned
    elements" describe; `attention="normalized"` is the published ratio with a guarded denominator
    (`normalized_attention`).

    Sizes (Table I): 300-d word vectors; the bi-LSTM's and the btree-LSTM's hidden state is 300. The
    bi-LSTM has 300 units per direction, so v_t = [→h_t; ←h_t] is 600-d; S_e interleaves word-layer
    outputs s_t and v_t in one sequence, so the word layer has the size of the encodings: 2 × 300 with
    the bi-LSTM, 300 with the btree-LSTM (the paper does not state it). The btree-LSTM is the binary
    tree-LSTM of §II.B.1 (Eq. 3-10 of Chen et al., the same block) over the complete binary tree of
    adjacent words paired recursively, an unpaired node carried up ("2n-1 encodings", §III); its
    internal nodes have no input (zeros, biases only). The paper gives no operator or aggregator size:
    `operator_size` (both operator layers and the aggregation LSTM) is 100, which puts the btree model
    near Table II's 2M (2.2M); the bi-LSTM model then has 3.9M, not Table II's 6M (3x the btree
    model): no one operator size meets both. Batch normalisation (§IV, γ initialised to 0.001, Table I)
    normalises A before the softmax layer (the paper does not say where).

    Args:
        hidden_size: the bi-LSTM's units per direction or the btree-LSTM's size (Table I: 300); the word
            layer and the elements of S_e have 2 × hidden_size (bi-LSTM) or hidden_size (btree) units.
        encoder: `"bilstm"` or `"btree"`.
        num_operators: k (preset: 11).
        operator_size: units of each operator layer and of the aggregation LSTM (preset: 100).
        attention: `"softmax"` or `"normalized"` (Eq. 3 as published).
        max_depth: btree levels computed when the padded length is not static (preset: 6, 64 tokens).
        **kwargs: `NLIModel` arguments.

    `explain()` returns `attention` `[B, Mh, Mp]` over the elements of S_e (row: a hypothesis element's
    weights over the premise elements): bi-LSTM: M = 2L, element 2t = s_t (word t), 2t + 1 = v_t;
    btree: M = 2L - 1, the in-order node layout of `zoo.data.trees` (2t = word t, 2t + 1 = the phrase
    joining words t and t + 1). `premise_mask` / `hypothesis_mask` mark the real elements; `gates`
    `[B, Mh, k]` are the operator gates of each hypothesis element.
    """

    def __init__(self, *, hidden_size, encoder, num_operators, operator_size, attention, max_depth, **kwargs):
        super().__init__(**kwargs)
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
        self.hidden_size = hidden_size
        self.encoder = encoder
        self.num_operators = num_operators
        self.operator_size = operator_size
        self.attention = attention
        self.max_depth = max_depth
        # The size of s_t and of the encodings v_t, one for both since S_e interleaves them (Eq. 2).
        self.element_size = 2 * hidden_size if encoder == "bilstm" else hidden_size
        self.word_layer = keras.layers.Dense(self.element_size, activation="sigmoid", name="word_layer")
        if encoder == "bilstm":
            self.sentence_encoder = bidirectional_lstm(hidden_size, "bilstm")          # 2 x 300, Table I
        else:
            self.sentence_encoder = BinaryTreeLSTM(hidden_size, max_depth=max_depth, name="btree_lstm")
        self.operators = GatedOperators(num_operators, operator_size, name="operators")
        self.aggregator = keras.layers.LSTM(operator_size, name="aggregation")
        self.batch_norm = keras.layers.BatchNormalization(
            momentum=0.9, gamma_initializer=keras.initializers.Constant(0.001), name="batch_norm")
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                                   # word vectors
        d = self.element_size
        self.word_layer.build((None, None, self.embedding_dim))                     # σ(W^T w + b)
        self.sentence_encoder.build((None, None, d))                                 # (2) S_e [B, M, D]
        self.operators.build((None, None, 2 * d))                                    # (4) over [t_p; H_e^p]
        self.aggregator.build((None, None, self.operator_size))                     # (5) A
        self.batch_norm.build((None, self.operator_size))
        self.classifier.build((None, self.operator_size))
        self.built = True

    def encode(self, words, mask, training=False, xla=False):
        """S_e `[B, M, D]` and its mask `[B, M]` (Eq. 2); D = `element_size`."""
        s = self.word_layer(words)                                                   # σ(W^T w) [B, L, D]
        if self.encoder == "bilstm":
            v = self.sentence_encoder(s, mask=recurrent_mask(mask), training=training, xla=xla,
                                      loop=self.lstm_loop)                           # [B, L, D = 2H]
            elements = ops.reshape(ops.stack([s, v], axis=2),
                                   (ops.shape(s)[0], -1, self.element_size))         # (s_1, v_1, ...) [B, 2L, D]
            element_mask = ops.reshape(ops.stack([mask, mask], axis=2), (ops.shape(mask)[0], -1))
            return elements, element_mask
        tree = complete_tree(mask, self.max_depth)                                   # [B, 2L - 1, 3]
        levels = min(num_levels(mask.shape[1], self.max_depth), self.max_depth)
        nodes = interleave(s, ops.zeros_like(s[:, 1:]))                              # no input at internal nodes
        return self.sentence_encoder(nodes, tree, levels=levels), node_mask(tree)   # [B, 2L - 1, D = H]

    def match(self, premise, hypothesis, premise_mask, hypothesis_mask, training=False, xla=False):
        p_e, p_mask = self.encode(premise, premise_mask, training, xla)              # [B, Mp, D]
        h_e, h_mask = self.encode(hypothesis, hypothesis_mask, training, xla)        # [B, Mh, D]
        scores = ops.einsum("bqd,bpd->bqp", h_e, p_e)                               # H_e^q · P_e^p [B, Mh, Mp]
        pair_mask = ops.logical_and(h_mask[:, :, None], p_mask[:, None, :])
        if self.attention == "softmax":
            weights = masked_softmax(scores, pair_mask)                              # (3), softmax form
        else:
            weights = normalized_attention(scores, pair_mask)                        # (3), as published
        t = ops.einsum("bqp,bpd->bqd", ops.cast(weights, p_e.dtype), p_e)           # t_p [B, Mh, D]
        o, gates = self.operators(ops.concatenate([t, h_e], axis=-1))               # (4) [B, Mh, s]
        a = self.aggregator(o, mask=recurrent_mask(h_mask), training=training)                       # (5) A [B, s]
        logits = self.classifier(self.batch_norm(a, training=training))              # (5)
        return {"logits": logits, "attention": weights, "premise_mask": p_mask, "hypothesis_mask": h_mask,
                "gates": ops.where(h_mask[..., None], gates, 0.0)}

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, encoder=self.encoder, num_operators=self.num_operators,
                      operator_size=self.operator_size, attention=self.attention, max_depth=self.max_depth)
        return config
