"""Trees as data and the batched binary tree-LSTM (Chen et al. 2017 Eq. 3-10) against a per-tree reference."""

import numpy as np
import pytest

from tests.support.models import random_tree
from zoo.data import tree_graph as G
from zoo.data import tree_pipeline as TP
from zoo.data import trees as T


def tree_lstm_block(x, hl, cl, hr, cr, W, b, U, hidden):
    """Chen et al. Eq. 4-10 at one node (numpy): `(h, c)` from its input x and children (h, c)."""
    sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    xw = x @ W + b
    z = np.concatenate([hl, hr]) @ U
    o = sigmoid(xw[:hidden] + z[:hidden])                                   # (5)
    fl = sigmoid(xw[hidden:2 * hidden] + z[hidden:2 * hidden])              # (7)
    fr = sigmoid(xw[hidden:2 * hidden] + z[2 * hidden:3 * hidden])          # (8)
    i = sigmoid(xw[2 * hidden:3 * hidden] + z[3 * hidden:4 * hidden])       # (9)
    u = np.tanh(xw[3 * hidden:] + z[4 * hidden:])                           # (10)
    c = fl * cl + fr * cr + i * u                                           # (6)
    return o * np.tanh(c), c                                                # (4)


def reference_tree_lstm(tree, vectors, internal_vectors, W, b, U, hidden):
    """Plain recursive numpy tree-LSTM: `{node index: h}` for one tree (leaves named by token index)."""
    out = {}

    def visit(node):
        if isinstance(node, str):
            t = int(node)
            x, hl, cl, hr, cr, index = vectors[t], *([np.zeros(hidden)] * 4), 2 * t
        else:
            (hl, cl, left_last), (hr, cr, _) = visit(node[0]), visit(node[1])
            index = 2 * left_last + 1
            x = internal_vectors[index]
        h, c = tree_lstm_block(x, hl, cl, hr, cr, W, b, U, hidden)
        out[index] = h
        last = max(int(leaf) for leaf in T.leaves(node)) if not isinstance(node, str) else int(node)
        return h, c, last

    visit(tree)
    return out


def reference_full_tree_lstm(n, vectors, internal_vectors, padding_vector, W, b, U, hidden):
    """Chen et al.'s full binary tree (Table 2 row 18), recursively in numpy: adjacent words merged
    into parents, round after round, over the n words followed by empty padding leaves up to the next
    power of two. A node over padding only is absent (empty: h = c = 0 for its parent); a node over
    words on its left and padding only on its right is a padding parent (input `padding_vector`).
    Returns `{node index: h}` of the 2n - 1 word and phrase nodes (in-order index 2t + 1 for the
    node where words t and t + 1 meet)."""
    size = 1 << max(n - 1, 0).bit_length()                                   # 2^ceil(log2 n)
    empty = np.zeros(hidden)
    out = {}

    def visit(start, width):  # the subtree over leaves [start, start + width)
        if start >= n:
            return None                                                      # padding only
        if width == 1:
            out[2 * start] = tree_lstm_block(vectors[start], empty, empty, empty, empty, W, b, U, hidden)
            return out[2 * start]
        left, right = visit(start, width // 2), visit(start + width // 2, width // 2)
        if right is None:                                                    # a word node + a padding node
            return tree_lstm_block(padding_vector, *left, empty, empty, W, b, U, hidden)
        index = 2 * (start + width // 2) - 1
        out[index] = tree_lstm_block(internal_vectors[index], *left, *right, W, b, U, hidden)
        return out[index]

    visit(0, size)
    return {index: h for index, (h, _) in out.items()}


# Trees as data ------------------------------------------------------------------------------------
def test_parse_gives_in_order_layout():
    tree = T.parse_binary_parse("( ( Two women ) ( ( are sleeping ) . ) )")
    assert T.leaves(tree) == ["Two", "women", "are", "sleeping", "."]
    a = T.tree_arrays(tree)
    assert a.shape == (9, 3)
    assert np.all(a[0::2] == [-1, -1, 0])                       # leaves at even nodes
    assert a[1].tolist() == [0, 2, 1]                           # (Two women)
    assert a[5].tolist() == [4, 6, 1]                           # (are sleeping)
    assert a[7].tolist() == [5, 8, 2]                           # ((are sleeping) .)
    assert a[3].tolist() == [1, 7, 3]                           # root
    # unary brackets collapse; a bare word is a one-leaf tree
    assert T.parse_binary_parse("( ( ( a b ) ) )") == ("a", "b")
    assert T.tree_arrays(T.parse_binary_parse("Dogs")).tolist() == [[-1, -1, 0]]


@pytest.mark.parametrize("parse", ["( ( a b ) c", "( a b ) )", "( ( ) a )", "( a ) ( b )", ""])
def test_malformed_parse_names_the_pair(parse):
    with pytest.raises(T.TreeFormatError, match="pair '12345#1r1e'"):
        T.parse_binary_parse(parse, pair_id="12345#1r1e", sentence="premise")


def test_leaves_must_match_tokens():
    with pytest.raises(T.TreeFormatError, match="pair 'p7'.*do not match"):
        T.sentence_tree("( ( Two women ) sleep )", ["two", "women", "sleeping"], pair_id="p7", sentence="hypothesis")
    arrays = T.sentence_tree("( ( Two women ) sleep )", ["two", "women", "sleep"], max_length=2)
    assert arrays.tolist() == [[-1, -1, 0], [0, 2, 1], [-1, -1, 0]]


def test_complete_trees():
    assert T.complete_tree(5) == ((("0", "1"), ("2", "3")), "4")
    for n in range(0, 70):
        closed = T.complete_tree_arrays(n)
        built = T.tree_arrays(T.complete_tree(n))
        assert closed.shape == (max(2 * n - 1, 0), 3)
        np.testing.assert_array_equal(closed[:, :2], built[:, :2])
        assert np.all(closed[:, 2] >= built[:, 2])  # pairing rounds >= heights: children always come first
        for row in closed[1::2]:
            assert closed[row[0], 2] < row[2] and closed[row[1], 2] < row[2]


def test_in_model_complete_trees_match_the_data_side():
    from zoo.layers.tree_lstm import complete_tree

    lengths = [0, 1, 2, 3, 5, 8, 9, 13]
    mask = np.arange(13)[None, :] < np.asarray(lengths)[:, None]
    built = np.asarray(complete_tree(mask))
    np.testing.assert_array_equal(built, T.pad_trees([T.complete_tree_arrays(n) for n in lengths], length=13))


def test_example_trees_and_dataset():
    from zoo.data.snli import load_snli
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    examples = load_snli("snli_sample")[0]["validation"][:24]
    tokenizer = Tokenizer()
    p, h, report = T.example_trees(examples, tokenizer, max_premise_length=6)
    assert report["fallback_complete"] == 0 and all(len(a) <= 11 for a in p)
    bad = [dict(examples[0], premise_binary_parse="( ( a b )")] + examples[1:3]
    with pytest.raises(T.TreeFormatError, match=repr(examples[0]["pair_id"])):
        T.example_trees(bad, tokenizer)
    assert T.example_trees(bad, tokenizer, on_error="complete")[2]["fallback_complete"] == 1

    sentences = [e["premise"] for e in examples] + [e["hypothesis"] for e in examples]
    vocab = Vocabulary.build(tokenizer.tokenize_batch(sentences))
    ds = TP.make_tree_dataset(examples, vocab, tokenizer, batch_size=8, bucket=True)
    fillers = 0
    for features, labels, weights in ds:
        filler = weights.numpy() == 0
        fillers += int(filler.sum())
        for key in ("premise", "hypothesis"):
            ids, tree = features[key].numpy(), features[f"{key}_tree"].numpy()
            assert tree.shape == (ids.shape[0], 2 * ids.shape[1] - 1, 3)
            np.testing.assert_array_equal(tree[:, 0::2, 2] == 0, ids != 0)   # leaves <-> real tokens
            assert not ids[filler].any() and (tree[filler] == T.PAD_NODE).all()  # fillers: empty sentence and tree
    assert fillers > 0


# The batched tree-LSTM -----------------------------------------------------------------------------
def test_batched_tree_lstm_matches_recursive_reference():
    from zoo.layers.tree_lstm import BinaryTreeLSTM, interleave

    rng = np.random.default_rng(0)
    hidden, dim, length = 5, 4, 11
    lengths = [11, 1, 7, 4, 9, 2]
    nested = [random_tree(rng, [str(t) for t in range(n)]) for n in lengths[:4]] + \
             [T.complete_tree(9), T.complete_tree(2)]
    arrays = [T.tree_arrays(t) for t in nested]
    depth = max(T.tree_height(a) for a in arrays)
    tree = T.pad_trees(arrays, length=length)
    words = rng.normal(size=(len(lengths), length, dim)).astype("float32")
    internal = rng.normal(size=(len(lengths), length - 1, dim)).astype("float32")
    nodes = np.asarray(interleave(words, internal))
    layer = BinaryTreeLSTM(hidden, max_depth=depth)
    layer.build(nodes.shape)
    for w in layer.weights:  # non-trivial biases
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    h = np.asarray(layer(nodes, tree))
    W, b, U = (np.asarray(w, dtype="float64") for w in (layer.kernel, layer.bias, layer.recurrent_kernel))
    for i, t in enumerate(nested):
        ref = reference_tree_lstm(t, words[i].astype("float64"), nodes[i].astype("float64"), W, b, U, hidden)
        assert sorted(ref) == list(range(2 * lengths[i] - 1))
        for index, value in ref.items():
            np.testing.assert_allclose(h[i, index], value, atol=1e-5)
        assert np.all(h[i, 2 * lengths[i] - 1:] == 0)             # padding nodes are zero

    # Padding nodes never change a real node: garbage at padding inputs, more padding slots.
    noisy = nodes.copy()
    for i, n in enumerate(lengths):
        noisy[i, 2 * n - 1:] = 100.0
    np.testing.assert_allclose(np.asarray(layer(noisy, tree)), h, atol=1e-6)
    wider = T.pad_trees(arrays, length=length + 4)
    wider_nodes = np.pad(nodes, ((0, 0), (0, 8), (0, 0)), constant_values=-7.0)
    np.testing.assert_allclose(np.asarray(layer(wider_nodes, wider))[:, :2 * length - 1], h, atol=1e-6)


def test_padded_complete_trees_match_the_full_binary_tree_reference():
    """`padded=True` over in-model complete trees = Chen et al.'s full binary tree with padding nodes;
    `padded=False` (carried) differs exactly where the length is not a power of two."""
    from zoo.layers.tree_lstm import BinaryTreeLSTM, complete_tree, interleave

    rng = np.random.default_rng(5)
    hidden, dim, length = 4, 3, 13
    lengths = [13, 1, 2, 3, 4, 5, 6, 7, 9, 0]
    tree = np.asarray(complete_tree(np.arange(length)[None] < np.asarray(lengths)[:, None]))
    words = rng.normal(size=(len(lengths), length, dim)).astype("float32")
    internal = rng.normal(size=(len(lengths), length - 1, dim)).astype("float32")
    nodes = np.asarray(interleave(words, internal))
    padding_vector = rng.normal(size=(dim,)).astype("float32")
    padded = BinaryTreeLSTM(hidden, max_depth=4, padded=True)
    carried = BinaryTreeLSTM(hidden, max_depth=4)
    padded.build(nodes.shape)
    carried.build(nodes.shape)
    for w in padded.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    carried.set_weights(padded.get_weights())
    h = np.asarray(padded(nodes, tree, padding_input=padding_vector))
    h_carried = np.asarray(carried(nodes, tree))
    W, b, U = (np.asarray(w, dtype="float64") for w in (padded.kernel, padded.bias, padded.recurrent_kernel))
    for i, n in enumerate(lengths):
        ref = reference_full_tree_lstm(n, words[i].astype("float64"), nodes[i].astype("float64"),
                                       padding_vector.astype("float64"), W, b, U, hidden)
        assert sorted(ref) == list(range(2 * n - 1))
        for index, value in ref.items():
            np.testing.assert_allclose(h[i, index], value, atol=1e-5)
        assert np.all(h[i, 2 * n - 1:] == 0)
        power_of_two = n & (n - 1) == 0
        assert np.allclose(h[i], h_carried[i], atol=1e-6) == power_of_two, n
    # The padding parents read their input: another x_pad changes the root of a 5-word tree, not a 4-word one.
    other = np.asarray(padded(nodes, tree, padding_input=-padding_vector))
    assert not np.allclose(other[5], h[5], atol=1e-4) and np.allclose(other[4], h[4], atol=1e-6)


@pytest.mark.large
def test_tree_lstm_trains_under_xla():
    import keras

    from zoo.layers.masking import masked_max
    from zoo.layers.tree_lstm import BinaryTreeLSTM, complete_tree, node_mask, root_state

    class TinyTree(keras.Model):
        def __init__(self):
            super().__init__()
            self.embedding = keras.layers.Embedding(20, 6)
            self.tree_lstm = BinaryTreeLSTM(8, max_depth=4)
            self.out = keras.layers.Dense(3)

        def call(self, inputs):
            ids, tree = inputs["ids"], inputs["tree"]
            x = self.embedding(ids)
            nodes = keras.ops.reshape(keras.ops.stack([x, x], 2), (-1, 2 * ids.shape[1], 6))[:, :-1]
            h = self.tree_lstm(nodes, tree)
            return self.out(keras.ops.concatenate([masked_max(h, node_mask(tree)), root_state(h, tree)], -1))

    rng = np.random.default_rng(1)
    ids = rng.integers(1, 20, (8, 6)).astype("int32")
    ids[:, 4:] *= (rng.random((8, 2)) < 0.5)
    ids[ids[:, 4] == 0, 5] = 0
    mask = ids != 0
    tree = T.pad_trees([T.tree_arrays(random_tree(rng, [str(t) for t in range(n)])) for n in mask.sum(1)], 6)
    np.testing.assert_array_equal(np.asarray(complete_tree(mask))[..., 2] >= 0, tree[..., 2] >= 0)
    model = TinyTree()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    labels = np.arange(8) % 3
    losses = [float(model.train_on_batch({"ids": ids, "tree": tree}, labels)) for _ in range(5)]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


# Trees in graph (serving) -------------------------------------------------------------------------
def _bracketed(tree, rng):
    """A parse string of a nested tree, with random unary brackets around some subtrees."""
    text = tree if isinstance(tree, str) else f"( {_bracketed(tree[0], rng)} {_bracketed(tree[1], rng)} )"
    return f"( {text} )" if rng.random() < 0.2 else text


def _parse_in_graph(parses, token_lists, length, **kwargs):
    """`tf_parse_trees` traced (as in a SavedModel; eagerly, its per-row loops are slow)."""
    import tensorflow as tf

    fn = tf.function(lambda p, t: G.tf_parse_trees(p, t, length, **kwargs))
    trees, status = fn(tf.constant(parses), tf.ragged.constant(token_lists))
    return trees.numpy(), status.numpy()


def _python_trees(parses, token_lists, length, max_length=None):
    return T.pad_trees([T.sentence_tree(p, t, max_length=max_length) for p, t in zip(parses, token_lists)], length)


@pytest.mark.large
@pytest.mark.parametrize("max_length", [None, 7])
def test_in_graph_parse_equals_python_on_every_shipped_sentence(max_length):

    from zoo.data.snli import load_snli
    from zoo.data.tokenizer import Tokenizer

    splits, _ = load_snli("snli_sample")
    examples = [ex for split in splits.values() for ex in split]
    tokenizer = Tokenizer(lowercase=True)
    for key in ("premise", "hypothesis"):
        parses = [ex[f"{key}_binary_parse"] for ex in examples]
        token_lists = tokenizer.tokenize_batch([ex[key] for ex in examples])
        length = max(min(len(t), max_length or 10 ** 6) for t in token_lists)
        trees, status = _parse_in_graph(parses, token_lists, length, lowercase=True, max_length=max_length,
                                        max_depth=48)
        assert np.all(status == G.PARSE_OK)
        np.testing.assert_array_equal(trees, _python_trees(parses, token_lists, length, max_length))


def test_in_graph_parse_of_random_trees_with_unary_and_wide_brackets():

    rng = np.random.default_rng(3)
    parses, token_lists = [], []
    for _ in range(60):
        words = [f"w{i}" for i in range(int(rng.integers(1, 25)))]
        parse = _bracketed(random_tree(rng, words), rng)
        if rng.random() < 0.3 and len(words) > 2:     # one flat bracket, binarized right-branching
            parse = "( " + " ".join(words) + " )"
        parses.append(parse)
        token_lists.append(words)
    length = max(len(t) + 2 for t in token_lists)   # extra padding slots stay padding
    trees, status = _parse_in_graph(parses, token_lists, length, lowercase=False)
    assert np.all(status == G.PARSE_OK)
    np.testing.assert_array_equal(trees, _python_trees(parses, token_lists, length))


def test_in_graph_parse_reports_each_error_as_the_python_parser_does():
    import tensorflow as tf

    cases = {"( ( a b ) c": G.PARSE_UNBALANCED, "( a b ) )": G.PARSE_UNBALANCED, "( ( ) a )": G.PARSE_EMPTY_BRACKETS,
             "( a ) ( b )": G.PARSE_TEXT_AFTER_ROOT, "( ( a b ) d )": G.PARSE_MISMATCH, "": G.PARSE_BLANK,
             "  ": G.PARSE_BLANK, "( a ( b c ) )": G.PARSE_TOO_DEEP, "( ( a b ) c )": G.PARSE_OK}
    parses = list(cases)
    token_lists = [["a", "b", "c"]] * len(parses)
    trees, status = _parse_in_graph(parses, token_lists, 3, lowercase=False)
    _, deep_status = _parse_in_graph(parses, token_lists, 3, lowercase=False, max_depth=1)
    for parse, got, got_deep in zip(parses, status, deep_status):
        expected = cases[parse]
        if expected == G.PARSE_TOO_DEEP:
            assert got == G.PARSE_OK and got_deep == G.PARSE_TOO_DEEP, parse
        elif expected == G.PARSE_OK:
            assert got == G.PARSE_OK and got_deep == G.PARSE_TOO_DEEP, parse   # 2 levels > max_depth 1
        else:
            assert got == expected, (parse, G.PARSE_STATUS_MESSAGES[got])
            if expected not in (G.PARSE_BLANK,):
                with pytest.raises(T.TreeFormatError):
                    T.sentence_tree(parse, ["a", "b", "c"])
        if got != G.PARSE_OK:
            assert np.all(trees[parses.index(parse)] == T.PAD_NODE)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"premise_binary_parse\[0\]: unbalanced brackets"):
        G.tf_parse_error_check(tf.constant(status), "premise_binary_parse")
    G.tf_parse_error_check(tf.constant([G.PARSE_OK, G.PARSE_BLANK]), "premise_binary_parse")  # no error
