"""Binary tree-LSTM over batches of trees, level by level (Chen et al. 2017 Eq. 3-10; Paria et al. 2016 §II.B.1).

Trees come in the in-order node layout of `zoo.data.trees` (read its docstring): per sentence of L
token slots, `int32 [B, 2L - 1, 3]` rows `[left, right, level]`, token t at node 2t, internal nodes at
odd indices, -1 for padding. `complete_tree` builds Chen's full binary tree / Paria's btree from the
token mask in-model, so the tree models also run on token ids alone.

The levels run as one recurrent loop (a `keras.layers.RNN` whose k-th step is level k): leaves
first, outside the loop (their children are empty); then at level k every internal node is computed
from its children, gathered with `take_along_axis`, and kept only where the node's level is k (`where`).
The loop is traced once whatever `max_depth` is (an unrolled Python loop over 48 levels took about a
minute to trace per model), compiles under XLA on TensorFlow and differentiates on JAX. A node whose
level exceeds the number of levels computed stays zero, so `max_depth` must cover the data
(`zoo.data.trees` checks).

Complete trees have two readings, both built from the same node layout (levels = pairing rounds):
- carried (`BinaryTreeLSTM(padded=False)`, Paria et al.'s btree with its "2n-1 encodings"): a node
  left without a partner at some round goes up unchanged and is paired at a later round;
- padded (`BinaryTreeLSTM(padded=True)`, Chen et al.'s full binary tree, "padding nodes are inserted
  when there are no enough leaves to form a full tree", Table 2 row 18): at every round where a node
  has no partner, the tree-LSTM combines it with an empty padding node (h = c = 0, Eq. 3-10 with a
  zero right child) into a *padding parent*; the parent of level k thus reads its child of level j
  through k - 1 - j padding parents, exactly as in the full binary tree over the words followed by
  padding leaves. Padding parents feed the tree-LSTM only: they are not among the 2n - 1 nodes the
  layer returns (which the models attend over and pool), so the node layout is the same either way.
"""

import math

import keras
from keras import ops

from zoo.constants import LEFT, LEVEL, RIGHT
from zoo.layers.cells import BoundCell
from zoo.layers.serializable import serializable


def interleave(leaves, internal):
    """The in-order node sequence `[B, 2L - 1, D]` from leaves `[B, L, D]` and internal nodes `[B, L - 1, D]`."""
    internal = ops.pad(internal, [[0, 0], [0, 1], [0, 0]])                     # [B, L, D]
    pairs = ops.stack([leaves, internal], axis=2)                             # [B, L, 2, D]
    shape = ops.shape(leaves)
    nodes = ops.reshape(pairs, (shape[0], -1, leaves.shape[-1]))             # [B, 2L, D]
    return nodes[:, :-1]


def node_mask(tree):
    """Boolean `[B, N]`: True at real nodes (level >= 0)."""
    return ops.greater_equal(tree[..., LEVEL], 0)


def num_levels(length, max_depth):
    """Levels a complete tree over `length` token slots needs: ceil(log2 L) when L is static, else `max_depth`."""
    if length is None:
        return int(max_depth)
    return max(int(math.ceil(math.log2(max(int(length), 1)))), 0)


def complete_tree(token_mask, max_depth=7):
    """Complete binary trees over the real tokens of each row, in-model (see `zoo.data.trees.complete_tree_arrays`).

    Args:
        token_mask: boolean `[B, L]` (right padding).
        max_depth: levels to build when L is not static (L > 2^max_depth tokens then lose their top nodes).

    Returns:
        int32 `[B, 2L - 1, 3]` tree arrays; identical to `zoo.data.trees.complete_tree_arrays` row by row.
    """
    n = ops.sum(ops.cast(token_mask, "int32"), axis=1, keepdims=True)           # [B, 1]
    length = ops.shape(token_mask)[1]
    levels = num_levels(token_mask.shape[1], max_depth)
    t = ops.expand_dims(ops.arange(0, length, dtype="int32"), 0)[:, :-1]       # [1, L - 1] internal node t
    # level = 1 + trailing ones of t; half = 2^(level - 1) (the size of the left subtree)
    half = ops.ones_like(t)
    for k in range(1, levels):
        half = ops.where(ops.equal(ops.mod(t + 1, 2 ** k), 0), 2 ** k, half)
    level = ops.ones_like(t)
    for k in range(1, levels):
        level = level + ops.cast(ops.equal(ops.mod(t + 1, 2 ** k), 0), "int32")
    start = t + 1 - half
    left = ops.where(ops.equal(level, 1), 2 * start, 2 * (start + half // 2 - 1) + 1)
    rest = ops.minimum(half, n - t - 1)                                          # right subtree size [B, L - 1]
    split = ops.zeros_like(rest)                                                 # 2^(ceil(log2 rest) - 1)
    for k in range(levels):
        split = ops.where(ops.less(2 ** k, rest), 2 ** k, split)
    right = ops.where(ops.equal(rest, 1), 2 * (t + 1), 2 * (t + split) + 1)
    real = ops.less(t, n - 1)
    pad = ops.full_like(rest, -1)
    internal = ops.stack([ops.where(real, left, pad), ops.where(real, right, pad),
                          ops.where(real, ops.broadcast_to(level, ops.shape(rest)), pad)], axis=-1)
    leaf_level = ops.where(token_mask, 0, -1)                                  # [B, L]
    leaf_pad = ops.full_like(leaf_level, -1)
    leaves = ops.stack([leaf_pad, leaf_pad, leaf_level], axis=-1)
    return ops.cast(interleave(leaves, internal), "int32")


def root_state(nodes, tree):
    """The vector of each tree's root (the real node of highest level) `[B, D]`; node 0 for an empty tree."""
    level = ops.where(node_mask(tree), tree[..., LEVEL], -1)
    root = ops.argmax(level, axis=1)                                           # [B]
    return ops.take_along_axis(nodes, ops.reshape(ops.cast(root, "int32"), (-1, 1, 1)), axis=1)[:, 0, :]


@serializable
class _TreeLevelCell(BoundCell):
    """One level of `BinaryTreeLSTM` as an `RNN` step: the children's terms U h and Eq. 4-10.

    Everything that does not depend on the previous level is bound with `bind(internal_x, children,
    leaf_hc, internal_level[, child_level, padding_x])` before the `RNN` runs and read at every step:
    W x + b of the internal nodes (o, f, i, u), each `[B, L - 1, H]`; the rows of their left then right
    children in `concatenate([leaves, internal nodes])` `[B, 2(L - 1), 1]`; the leaves' `[h; c]`
    `[B, L, 2H]`; the internal nodes' levels `[B, L - 1, 1]`; with `padded`, also the children's levels
    `[B, 2(L - 1), 1]` and W x + b of a padding parent (o, f, i, u), each broadcastable to
    `[B, 1, H]`. The step input is the level k `[B, 1]`; the states are the internal nodes' (h, c),
    each `[B, L - 1, H]`, and with `padded` the children as their parents of level k + 1 will read
    them, `[h; c]` `[B, 2(L - 1), 2H]` (passed as `initial_state`; `state_size` gives only their last
    axis). The step output is k, unused.

    Args:
        hidden_size: H.
        padded: lift children through padding parents (see `BinaryTreeLSTM`).
    """

    def __init__(self, hidden_size, padded=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.padded = bool(padded)
        self.state_size = [self.hidden_size, self.hidden_size] + ([2 * self.hidden_size] if self.padded else [])
        self.output_size = 1

    def build(self, input_shape=None):
        self.recurrent_kernel = self.add_weight(name="U", shape=(2 * self.hidden_size, 5 * self.hidden_size),
                                                initializer="orthogonal")
        self.built = True

    def call(self, level, states, training=False):
        bound = self.bound()
        (x_o, x_f, x_i, x_u), children, leaf_hc, internal_level = bound[:4]
        internal_h, internal_c = states[0], states[1]
        hidden = self.hidden_size
        internal = ops.shape(internal_h)[1]
        kernel = ops.cast(self.recurrent_kernel, internal_h.dtype)
        k = ops.cast(ops.expand_dims(level, 1), internal_level.dtype)            # [B, 1, 1]
        # One gather of (h, c) for both children: rows [left children; right children] [B, 2(L - 1), 2H].
        all_hc = ops.concatenate([leaf_hc, ops.concatenate([internal_h, internal_c], axis=-1)], axis=1)
        child_hc = ops.take_along_axis(all_hc, children, axis=1)
        if self.padded:
            child_level, (p_o, p_f, p_i, p_u) = bound[4], bound[5]
            # A child of level k - 1 is read as it is; a lower one through the padding parents that
            # lifted it one level per step (the third state holds it as seen from level k - 1).
            child_hc = ops.where(ops.equal(child_level, k - 1), child_hc, states[2])
        h_left, c_left = child_hc[:, :internal, :hidden], child_hc[:, :internal, hidden:]    # h^L, c^L
        h_right, c_right = child_hc[:, internal:, :hidden], child_hc[:, internal:, hidden:]  # h^R, c^R
        z = ops.einsum("bnk,kg->bng", ops.concatenate([h_left, h_right], axis=-1), kernel)
        o = ops.sigmoid(x_o + z[..., :hidden])                                   # (5)
        f_left = ops.sigmoid(x_f + z[..., hidden:2 * hidden])                    # (7)
        f_right = ops.sigmoid(x_f + z[..., 2 * hidden:3 * hidden])               # (8)
        i = ops.sigmoid(x_i + z[..., 3 * hidden:4 * hidden])                     # (9)
        u = ops.tanh(x_u + z[..., 4 * hidden:])                                  # (10)
        c = f_left * c_left + f_right * c_right + i * u                          # (6)
        h = o * ops.tanh(c)                                                      # (4)
        now = ops.equal(internal_level, k)                                       # the nodes of level k
        new_states = [ops.where(now, h, internal_h), ops.where(now, c, internal_c)]
        if self.padded:
            # Every child as the left child of a padding parent of level k, its right child empty
            # (h^R = c^R = 0): Eq. 5, 7, 9, 10 with U^R h^R = 0, Eq. 6 without f^R c^R, Eq. 4.
            h_in, c_in = child_hc[..., :hidden], child_hc[..., hidden:]          # [B, 2(L - 1), H]
            zp = ops.einsum("bnk,kg->bng", h_in, kernel[:hidden])                # U^L h^L
            po = ops.sigmoid(p_o + zp[..., :hidden])                             # (5)
            pf = ops.sigmoid(p_f + zp[..., hidden:2 * hidden])                   # (7)
            pi = ops.sigmoid(p_i + zp[..., 3 * hidden:4 * hidden])               # (9)
            pu = ops.tanh(p_u + zp[..., 4 * hidden:])                            # (10)
            pc = pf * c_in + pi * pu                                             # (6), c^R = 0
            new_states.append(ops.concatenate([po * ops.tanh(pc), pc], axis=-1))  # (4)
        return level, new_states

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, padded=self.padded)
        return config


@serializable
class BinaryTreeLSTM(keras.layers.Layer):
    """The binary tree-LSTM memory block of Chen et al. (2017), Eq. 3-10, over whole batches of trees.

    At node t with input x_t and children (h^L, c^L), (h^R, c^R):

        o_t   = σ(W_o x_t + U_o^L h^L + U_o^R h^R)                 (5)
        f_t^L = σ(W_f x_t + U_f^LL h^L + U_f^LR h^R)                (7)
        f_t^R = σ(W_f x_t + U_f^RL h^L + U_f^RR h^R)                (8)
        i_t   = σ(W_i x_t + U_i^L h^L + U_i^R h^R)                 (9)
        u_t   = tanh(W_c x_t + U_c^L h^L + U_c^R h^R)              (10)
        c_t   = f_t^L ⊙ c^L + f_t^R ⊙ c^R + i_t ⊙ u_t              (6)
        h_t   = o_t ⊙ tanh(c_t)                                     (4)

    The two forget gates share W_f (Eq. 7-8) and have their own U. Leaves have empty children
    (h = c = 0). Biases are added to the four W terms. Weights: W `[d, 4H]` (o, f, i, c), b `[4H]`,
    U `[2H, 5H]` (rows: h^L then h^R; columns: o, f^L, f^R, i, c); einsums only (no `Dense` on rank-3
    tensors), so the level loop compiles under XLA.

    With `padded=True` (Chen et al.'s full binary tree, for complete trees, whose levels are pairing
    rounds): a node of level k whose child has level j < k - 1 reads that child through k - 1 - j
    padding parents, each the tree-LSTM block over (the node below it, an empty padding node):

        P(h', c') = the block at a node with input x_pad, h^L = h', c^L = c', h^R = c^R = 0   (3)-(10)

    x_pad is `padding_input` (Chen et al.'s x', which every non-leaf node reads, in the input
    encoding; zeros where the model has no such vector). Padding parents are not returned. Given parse
    trees (levels = heights) must not be read `padded`: their short children are real.

    Args:
        hidden_size: H.
        max_depth: the number of levels computed when the trees are given (parses); complete trees
            built in-model need only ceil(log2 L) when L is static.
        padded: read short children through padding parents (complete trees, Chen et al.'s reading).

    Call: `(nodes [B, N, d], tree int32 [B, N, 3]) -> h [B, N, H]`, zeros at padding nodes. With
    `return_cells=True` returns `(h, c)`; `padding_input` (`[d]` or `[B, d]`, with `padded`) is x_pad.
    """

    def __init__(self, hidden_size, max_depth=7, padded=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.max_depth = int(max_depth)
        self.padded = bool(padded)
        self.levels = keras.layers.RNN(_TreeLevelCell(self.hidden_size, padded=self.padded, name="levels_cell"),
                                       return_state=True, name="levels")

    def build(self, nodes_shape, tree_shape=None):
        """W `[d, 4H]` and b `[4H]` from the node vectors `[B, N, d]`; U `[2H, 5H]` in the level loop,
        whose step input is the level k `[B, 1]`."""
        hidden = self.hidden_size
        self.kernel = self.add_weight(name="W", shape=(nodes_shape[-1], 4 * hidden), initializer="glorot_uniform")
        self.bias = self.add_weight(name="b", shape=(4 * hidden,), initializer="zeros")
        self.levels.build((None, None, 1))
        self.built = True

    @property
    def level_cell(self):
        """The loop's step (`_TreeLevelCell`), held by the `RNN` only, so that a model summary counts U once."""
        return self.levels.cell

    @property
    def recurrent_kernel(self):
        """U `[2H, 5H]` (held by the level cell, which runs inside the loop)."""
        return self.level_cell.recurrent_kernel

    def call(self, nodes, tree, levels=None, return_cells=False, padding_input=None):
        """Runs the block over every tree; `levels` overrides the number of levels computed."""
        hidden = self.hidden_size
        levels = self.max_depth if levels is None else int(levels)
        tree = ops.cast(tree, "int32")
        projected = ops.einsum("bnd,dg->bng", nodes, self.kernel) + self.bias   # W x_t + b, every node
        mask = ops.expand_dims(node_mask(tree), -1)                              # [B, N, 1]

        # Leaves (level 0): no children, so c = i ⊙ u and the forget gates play no part.
        leaf_x = projected[:, 0::2]                                              # [B, L, 4H]
        leaf_o, _, leaf_i, leaf_u = (leaf_x[..., j * hidden:(j + 1) * hidden] for j in range(4))
        leaf_c = ops.sigmoid(leaf_i) * ops.tanh(leaf_u)                          # (6)
        leaf_h = ops.sigmoid(leaf_o) * ops.tanh(leaf_c)                          # (4)
        leaf_mask = mask[:, 0::2]
        leaf_c = ops.where(leaf_mask, leaf_c, 0.0)
        leaf_h = ops.where(leaf_mask, leaf_h, 0.0)

        internal_x = projected[:, 1::2]                                          # [B, L - 1, 4H]
        internal_tree = tree[:, 1::2]
        internal_level = internal_tree[..., LEVEL:LEVEL + 1]                     # [B, L - 1, 1]
        num_leaves = ops.shape(leaf_h)[1]
        # Node index p -> row of concatenate([leaves, internal]): leaf 2t -> t, internal 2t + 1 -> L + t.
        children = []
        for slot in (LEFT, RIGHT):
            p = ops.maximum(internal_tree[..., slot], 0)
            row = ops.where(ops.equal(ops.mod(p, 2), 0), p // 2, num_leaves + p // 2)
            children.append(ops.expand_dims(row, -1))                            # [B, L - 1, 1]
        children = ops.concatenate(children, axis=1)                             # [B, 2(L - 1), 1]
        gates = tuple(internal_x[..., j * hidden:(j + 1) * hidden] for j in range(4))   # o, f, i, u
        internal_h = ops.zeros_like(gates[0])                                    # [B, L - 1, H]
        internal_c = ops.zeros_like(gates[0])
        if levels > 0:
            # Step k of the loop computes level k = 1 .. levels.
            steps = ops.arange(1, levels + 1, dtype=internal_h.dtype)            # [levels]
            steps = ops.broadcast_to(ops.reshape(steps, (1, levels, 1)), (ops.shape(internal_h)[0], levels, 1))
            bound = [gates, children, ops.concatenate([leaf_h, leaf_c], axis=-1), internal_level]
            states = [internal_h, internal_c]
            if self.padded:
                node_level = ops.concatenate([tree[:, 0::2, LEVEL:LEVEL + 1], internal_level], axis=1)
                bound.append(ops.take_along_axis(node_level, children, axis=1))  # children's levels
                bound.append(self._padding_gates(padding_input, projected.dtype))
                lifted = ops.concatenate([internal_h, internal_c], axis=-1)      # zeros [B, L - 1, 2H]
                states.append(ops.concatenate([lifted, lifted], axis=1))         # [B, 2(L - 1), 2H]
            self.level_cell.bind(*bound)
            try:
                _, internal_h, internal_c, *_ = self.levels(steps, initial_state=states)
            finally:
                self.level_cell.release()
        h = interleave(leaf_h, internal_h)                                       # [B, N, H]
        if return_cells:
            return h, interleave(leaf_c, internal_c)
        return h

    def _padding_gates(self, padding_input, dtype):
        """W x_pad + b of a padding parent, split into (o, f, i, u), each `[B or 1, 1, H]`."""
        projected = ops.cast(self.bias, dtype)
        if padding_input is not None:
            projected = ops.matmul(ops.cast(padding_input, dtype), ops.cast(self.kernel, dtype)) + projected
        projected = ops.reshape(projected, (-1, 1, 4 * self.hidden_size))
        return tuple(projected[..., j * self.hidden_size:(j + 1) * self.hidden_size] for j in range(4))

    def compute_output_shape(self, nodes_shape, tree_shape=None):
        return tuple(nodes_shape[:-1]) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, max_depth=self.max_depth, padded=self.padded)
        return config
