"""Chen et al. (2017): the tree-LSTM inference model over syntactic parses or complete binary trees."""

import keras
from keras import ops

from zoo.layers.alignment import dot_scores, enhance_folded, folded_dense, mean_max_pool, soft_align
from zoo.layers.masking import padding_mask
from zoo.layers.serializable import serializable
from zoo.layers.tree_lstm import BinaryTreeLSTM, complete_tree, interleave, node_mask, num_levels, root_state
from zoo.models.base import NLIModel
from zoo.models.esim import ESIM_DATA, ESIM_TRAIN
from zoo.registry import register_model

TREES = ("syntactic", "complete")
# How `trees="complete"` reads a node left without a partner at some pairing round (`BinaryTreeLSTM`):
# "padded" (Chen et al., Table 2 row 18: "padding nodes are inserted when there are no enough leaves to
# form a full tree") or "carried" (up unchanged, as Paria et al.'s btree).
COMPLETE_TREES = ("padded", "carried")
# Levels computed over given parse trees. The sample's parses are at most 23 levels deep; SNLI's longest
# premises need more. `zoo.data.trees.make_tree_dataset(max_depth=...)` reports deeper trees.
SYNTACTIC_MAX_DEPTH = 48


@serializable
class InternalNodeInput(keras.layers.Layer):
    """x'_t: the one learned vector that every non-leaf node reads in the input encoding (Chen et al. §3.1,
    "like an unknown word"). Call: `words [B, L, E] -> nodes [B, 2L - 1, E]` (in-order node layout)."""

    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.dim = int(dim)

    def build(self, input_shape=None):
        self.vector = self.add_weight(name="x_prime", shape=(self.dim,),
                                      initializer=keras.initializers.RandomUniform(-0.05, 0.05))
        self.built = True

    def call(self, words):
        internal = ops.zeros_like(words[:, 1:]) + ops.cast(self.vector, words.dtype)   # [B, L - 1, E]
        return interleave(words, internal)

    def get_config(self):
        config = super().get_config()
        config.update(dim=self.dim)
        return config


@register_model("syntactic_tree_lstm",
                model={"hidden_size": 300, "dropout": 0.5, "trees": "syntactic", "max_depth": SYNTACTIC_MAX_DEPTH,
                       "complete_trees": "padded"},
                train=ESIM_TRAIN, data=ESIM_DATA,
                paper="Chen et al. 2017, Table 2 '(25) syn.tree' (the tree member of '(17) HIM'; 300-d); "
                      "|θ|_M not given (HIM 7.7M − ESIM 4.3M ≈ 3.4M)",
                paper_params=None, attention=("attention", "attention_reverse"))
@register_model("esim_tree",
                model={"hidden_size": 300, "dropout": 0.5, "trees": "complete", "max_depth": 7,
                       "complete_trees": "padded"},
                train=ESIM_TRAIN, data=ESIM_DATA,
                paper="Chen et al. 2017, Table 2 '(18) ESIM + tree': the tree model over full binary trees "
                      "(the row's accuracy is its ensemble with ESIM: `him` with this member)",
                paper_params=None, attention=("attention", "attention_reverse"))
class SyntacticTreeLSTM(NLIModel):
    """The tree inference model of Chen et al. (2017), §3.1-3.3, tree-LSTMs in both layers.

    With a the premise, b the hypothesis, each a binary tree over its words (a parse, or the complete
    binary tree pairing adjacent words recursively), every layer runs over all 2n - 1 tree nodes:

        ā_t = TrLSTM(x_t, h^L, h^R)   x_t: word vector at leaves, learned x' elsewhere      (3)-(10)
        e_ij = ā_i^T b̄_j                                   over all node pairs                (11)
        ã_i = Σ_j softmax_j(e_ij) b̄_j,  b̃_j = Σ_i softmax_i(e_ij) ā_i                        (12)-(13)
        m_a = [ā; ã; ā − ã; ā ⊙ ã],  m_b likewise                                            (14)-(15)
        v_{a,t} = TrLSTM(F(m_{a,t}), h^L, h^R),  v_{b,t} likewise   F: one ReLU layer        (16)-(17)
        v = [ave(v_a); max(v_a); root(v_a); ave(v_b); max(v_b); root(v_b)]                   (18)-(20), §3.3

    ("Our tree composition will concatenate also the hidden states computed for the roots"), then an MLP
    with one tanh hidden layer and the softmax layer. One encoding tree-LSTM reads both sentences and one
    composition tree-LSTM composes both (as ESIM shares its BiLSTMs). Dropout as in `esim`: word vectors,
    F's output, v and the tanh layer's output. With H = 300 the model has 3.4M parameters besides the
    word vectors: HIM's 7.7M (Table 1) minus ESIM's 4.3M.

    Trees (see `zoo.data.trees`): inputs may hold `premise_tree` and `hypothesis_tree`, int32
    `[B, 2L - 1, 3]` in the in-order node layout (`zoo.data.trees.make_tree_dataset`). Without them, or
    with `trees="complete"`, complete binary trees are built in-model from the token ids (`esim_tree`).

    Complete trees (`trees="complete"`, Table 2 row 18): "two adjacent words in a sentence are merged
    to form a parent node, and this process continues and results in a full binary tree, where padding
    nodes are inserted when there are no enough leaves to form a full tree". With
    `complete_trees="padded"` (the presets) a node without a partner at some round is combined with an
    empty padding node (h = c = 0) by both tree-LSTMs, at every round until it is paired
    (`BinaryTreeLSTM(padded=True)`); these padding parents read x' in the input encoding (every
    non-leaf node does, §3.1) and zeros in the composition (they have no alignment of their own: the
    paper does not say whether the inserted nodes take part in attention and pooling, and here they do
    not, so the 2n - 1 nodes attended over and pooled are the same in both readings).
    `complete_trees="carried"` carries such a node up unchanged instead. With `trees="syntactic"`,
    the complete trees that stand in for missing parses are always carried, the tree that
    `zoo.data.trees` gives the same sentences, so a pair reads the same tree whether the data pipeline
    or the model falls back.

    Args:
        hidden_size: H, the size of both tree-LSTMs, F and the tanh layer (preset: 300).
        dropout: rate of every dropout layer (preset: 0.5).
        trees: `"syntactic"` (use given parse trees, complete trees when absent) or `"complete"` (always).
        max_depth: levels the tree-LSTMs compute over given trees (and over complete trees when the
            padded length is not static); deeper nodes would stay zero.
        complete_trees: `"padded"` or `"carried"`, how `trees="complete"` treats a node without a
            partner (see above).
        **kwargs: `NLIModel` arguments.

    Raises:
        ValueError: an unknown `trees` or `complete_trees`.

    `explain()` returns, over tree nodes in the in-order layout (node 2t = word t, node 2t + 1 = the
    smallest phrase containing words t and t + 1), `attention` `[B, Nh, Np]` (row: a hypothesis node's
    distribution over the premise nodes, Eq. 13), `attention_reverse` `[B, Np, Nh]` (Eq. 12), and the
    boolean real-node masks `premise_mask` `[B, Np]` and `hypothesis_mask` `[B, Nh]` (N = 2L - 1).
    """

    def __init__(self, *, hidden_size, dropout, trees, max_depth, complete_trees, **kwargs):
        super().__init__(**kwargs)
        if trees not in TREES:
            raise ValueError(f"trees must be one of {TREES}, got {trees!r}")
        if complete_trees not in COMPLETE_TREES:
            raise ValueError(f"complete_trees must be one of {COMPLETE_TREES}, got {complete_trees!r}")
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.trees = trees
        self.max_depth = max_depth
        self.complete_trees = complete_trees
        padded = trees == "complete" and complete_trees == "padded"   # given parses are never padded
        self.input_dropout = keras.layers.Dropout(dropout)
        self.internal_input = InternalNodeInput(self.embedding_dim, name="internal_node_input")
        self.input_encoder = BinaryTreeLSTM(hidden_size, max_depth=max_depth, padded=padded, name="input_encoding")
        self.projection = keras.layers.Dense(hidden_size, activation="relu", name="F")
        self.projection_dropout = keras.layers.Dropout(dropout)
        self.composition = BinaryTreeLSTM(hidden_size, max_depth=max_depth, padded=padded, name="composition")
        self.pooled_dropout = keras.layers.Dropout(dropout)
        self.mlp = keras.layers.Dense(hidden_size, activation="tanh", name="tanh_0")
        self.mlp_dropout = keras.layers.Dropout(dropout)
        self.classifier = keras.layers.Dense(self.num_classes, dtype="float32", name="classifier")

    def build(self, input_shape=None):
        """Creates every weight from the sizes alone, in the order the forward pass uses them."""
        super().build(input_shape)                                                   # word vectors
        h = self.hidden_size
        self.internal_input.build()                                                  # x'
        self.input_encoder.build((None, None, self.embedding_dim))                  # (3)-(10) over x_t / x'
        self.projection.build((None, None, 4 * h))                                   # F(m), m [B, N, 4H]
        self.composition.build((None, None, h))                                      # (16)-(17)
        self.mlp.build((None, 6 * h))                                                # (20) v [B, 6H]
        self.classifier.build((None, h))
        self.built = True

    def tree_of(self, inputs, key, mask):
        """`(tree [B, 2L - 1, 3], levels)`: the given parse tree or the in-model complete tree of one sentence."""
        given = inputs.get(f"{key}_tree") if hasattr(inputs, "get") else None
        if self.trees == "syntactic" and given is not None:
            return ops.cast(given, "int32"), self.max_depth
        return complete_tree(mask, self.max_depth), min(num_levels(mask.shape[1], self.max_depth), self.max_depth)

    def forward(self, inputs, training=False, xla=None):
        premise_mask = padding_mask(inputs["premise"])                               # [B, Lp]
        hypothesis_mask = padding_mask(inputs["hypothesis"])                         # [B, Lh]
        premise_tree, premise_levels = self.tree_of(inputs, "premise", premise_mask)
        hypothesis_tree, hypothesis_levels = self.tree_of(inputs, "hypothesis", hypothesis_mask)
        sides = []
        for ids, tree, levels in ((inputs["premise"], premise_tree, premise_levels),
                                  (inputs["hypothesis"], hypothesis_tree, hypothesis_levels)):
            words = self.input_dropout(self.embedding(ids), training=training)      # [B, L, E]
            nodes = self.internal_input(words)                                      # x_t / x'_t [B, N, E]
            bar = self.input_encoder(nodes, tree, levels=levels,
                                     padding_input=self.internal_input.vector)      # (3) [B, N, H]
            sides.append((tree, node_mask(tree), levels, bar))
        (a_tree, a_mask, a_levels, a_bar), (b_tree, b_mask, b_levels, b_bar) = sides
        a_tilde, b_tilde, weights_a, weights_b = soft_align(
            dot_scores(a_bar, b_bar), a_bar, b_bar, a_mask, b_mask)                  # (11)-(13) over nodes
        pooled = []
        project = folded_dense(self.projection, self.hidden_size)                    # F, its kernel folded once
        for bar, tilde, tree, mask, levels in ((a_bar, a_tilde, a_tree, a_mask, a_levels),
                                               (b_bar, b_tilde, b_tree, b_mask, b_levels)):
            m = enhance_folded(bar, tilde)                 # (14)-(15) without x̄ − x̃, folded into F [B, N, 3H]
            x = self.projection_dropout(project(m), training=training)              # F(m) [B, N, H]
            v = self.composition(x, tree, levels=levels)                            # (16)-(17) [B, N, H]
            pooled += [mean_max_pool(v, mask), root_state(v, tree)]                 # (18)-(19) + root
        v = self.pooled_dropout(ops.concatenate(pooled, axis=-1), training=training)  # (20) [B, 6H]
        v = self.mlp_dropout(self.mlp(v), training=training)                        # [B, H]
        return {"logits": ops.cast(self.classifier(v), "float32"),
                "attention": weights_b,                                              # [B, Nh, Np]
                "attention_reverse": weights_a,                                      # [B, Np, Nh]
                "premise_mask": a_mask, "hypothesis_mask": b_mask}

    @property
    def reads_parse_trees(self):
        return self.trees == "syntactic"

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, dropout=self.dropout, trees=self.trees,
                      max_depth=self.max_depth, complete_trees=self.complete_trees)
        return config
