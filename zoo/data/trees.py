"""Binary trees over sentences as batched integer arrays: SNLI's binary parses and complete binary trees.

The tree models (Chen et al. 2017 §3.1-3.3, Paria et al. 2016 §II.B.1) run a binary tree-LSTM over a
whole batch of trees level by level; they never build one graph per example. Every tree is stored in
the **in-order node layout**, shared by the data side and the models:

- A full binary tree over n tokens has 2n - 1 nodes. Listed in in-order (left subtree, node, right
  subtree) they alternate leaf, internal, leaf, ..., leaf: token t is node 2t and the internal node at
  2t + 1 is the lowest common ancestor of tokens t and t + 1 (the phrase where they first meet).
- A sentence padded to L tokens has N = 2L - 1 node slots; nodes 0 .. 2n - 2 are real, the rest are
  padding. Padding a batch further only appends slots, so node indices (and node attention maps) do
  not depend on the padded length; and the node inputs are the word vectors interleaved with a vector
  for the internal nodes (no gather).
- Each node slot holds three int32 numbers, `[left, right, level]`:
  `left`, `right`: node indices of the children (-1 for leaves and padding);
  `level`: 0 for leaves, >= 1 for internal nodes (every child has a lower level than its parent, so
  computing levels 1, 2, ... in turn always finds the children done), -1 for padding slots.
  The root is the real node with the highest level.

A batch is `int32 [B, 2L - 1, 3]` per sentence (fed as `"premise_tree"` / `"hypothesis_tree"` next to the
token ids `[B, L]`), padded with -1.

Trees:
- `parse_binary_parse`: SNLI's `sentence1_binary_parse` ("( ( Two women ) ( are ... ) )"): brackets
  nest, leaves are the PTB tokens. Unary brackets ("( word )", "( ( a b ) )") are collapsed, and a
  bracket with more than two children is binarized right-branching (SNLI's binary parses have none).
- `complete_tree`: Chen et al.'s "full binary tree" (Table 2 row 18) and Paria et al.'s btree: adjacent
  nodes paired recursively, level by level; a node left without a partner at a level (the count is not
  a power of two) is carried up unchanged to the round where it finds a partner, so there are exactly
  2n - 1 nodes (levels are pairing rounds). Paria's btree reads this tree as it is; Chen's full binary
  tree (`esim_tree`) inserts padding nodes, which `BinaryTreeLSTM(padded=True)` computes inside the
  tree-LSTM without adding node slots. The same tree is built in-model from the token mask by
  `zoo.layers.tree_lstm.complete_tree`.

Example:
```python
tree = parse_binary_parse("( ( Two women ) ( ( are sleeping ) . ) )")
tree_arrays(tree)          # int32 [9, 3]: leaves at 0, 2, 4, 6, 8
pad_trees([tree_arrays(tree), complete_tree_arrays(3)], length=5)   # int32 [2, 9, 3]
```
"""

import numpy as np

from zoo.constants import LEFT, LEVEL, PAD_NODE, RIGHT  # noqa: F401 (the tree layout, shared with the models)


class TreeFormatError(ValueError):
    """A binary parse is malformed or does not match the sentence's tokens; the message names the pair."""


def parse_binary_parse(parse, pair_id=None, sentence=None):
    """Parses a bracketed binary parse into a nested tree of leaves.

    Args:
        parse: e.g. `"( ( Two women ) ( ( are sleeping ) . ) )"` (tokens separated by spaces).
        pair_id: the pair's id, named in errors.
        sentence: `"premise"` or `"hypothesis"`, named in errors.

    Returns:
        A leaf (str) or a pair `(left, right)` of trees; unary brackets collapsed, wider ones binarized.

    Raises:
        TreeFormatError: unbalanced or empty brackets, text after the root, or no leaf at all.
    """
    where = _where(pair_id, sentence)
    stack = [[]]
    for token in parse.split():
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise TreeFormatError(f"{where}: unbalanced brackets (a ')' closes nothing) in {parse!r}")
            children = stack.pop()
            if not children:
                raise TreeFormatError(f"{where}: empty brackets '( )' in {parse!r}")
            stack[-1].append(_binarize(children))
        else:
            stack[-1].append(token)
    if len(stack) != 1:
        raise TreeFormatError(f"{where}: unbalanced brackets ({len(stack) - 1} '(' never closed) in {parse!r}")
    if not stack[0]:
        raise TreeFormatError(f"{where}: the parse has no leaf: {parse!r}")
    if len(stack[0]) > 1:
        raise TreeFormatError(f"{where}: text after the root bracket in {parse!r}")
    return stack[0][0]


def _binarize(children):
    if len(children) == 1:
        return children[0]
    tree = children[-1]
    for child in reversed(children[:-1]):
        tree = (child, tree)
    return tree


def _where(pair_id, sentence):
    name = f"pair {pair_id!r}" if pair_id is not None else "parse"
    return f"{name} ({sentence})" if sentence else name


def leaves(tree):
    """The leaves of a nested tree, left to right."""
    out = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        else:
            stack.extend(reversed(node))
    return out


def truncate(tree, length):
    """The tree restricted to its first `length` leaves (nodes left with one child are collapsed)."""
    if length <= 0:
        return None
    kept, _ = _truncate(tree, length)
    return kept


def _truncate(tree, budget):
    if isinstance(tree, str):
        return tree, budget - 1
    left, budget = _truncate(tree[0], budget)
    if budget <= 0:
        return left, budget
    right, budget = _truncate(tree[1], budget)
    return (left, right), budget


def complete_tree(num_leaves, leaf=None):
    """Chen et al.'s full binary tree / Paria et al.'s btree over `num_leaves` leaves, as a nested tree.

    Adjacent nodes are paired level by level; an unpaired last node is carried up. Leaves are
    `leaf(t)` (default: `str(t)`). Returns None for zero leaves.
    """
    level = [leaf(t) if leaf else str(t) for t in range(num_leaves)]
    if not level:
        return None
    while len(level) > 1:
        level = [(level[i], level[i + 1]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    return level[0]


def tree_arrays(tree):
    """In-order node arrays of one tree: int32 `[2n - 1, 3]` rows `[left, right, level]` (`[0, 3]` if None)."""
    if tree is None:
        return np.zeros((0, 3), np.int32)
    rows = []
    counter = [0]  # leaves seen so far

    # Post-order walk; returns (node index, level). Recursion depth = tree height (< tokens).
    def visit(node):
        if isinstance(node, str):
            index = 2 * counter[0]
            counter[0] += 1
            rows.append((index, PAD_NODE, PAD_NODE, 0))
            return index, 0
        left, left_level = visit(node[0])
        index = 2 * counter[0] - 1  # between the last leaf of the left subtree and the next leaf
        right, right_level = visit(node[1])
        level = 1 + max(left_level, right_level)
        rows.append((index, left, right, level))
        return index, level

    visit(tree)
    out = np.full((len(rows), 3), PAD_NODE, np.int32)
    for index, left, right, level in rows:
        out[index] = (left, right, level)
    return out


def complete_tree_arrays(num_leaves):
    """`tree_arrays(complete_tree(num_leaves))`, in closed form (the formula the in-model builder uses).

    The internal node 2t + 1 sits at level l = 1 + (trailing one bits of t); it covers tokens from
    s = t + 1 - 2^(l-1) on; its left child is the complete subtree over the 2^(l-1) tokens from s, its
    right child the (possibly smaller, carried-up) tree over the r = min(2^(l-1), n - t - 1) tokens from
    t + 1, whose root is node 2(t + 2^(m-1)) + 1 with m = ceil(log2 r) (or the leaf 2(t + 1) when r = 1).
    Levels here are these pairing rounds, not heights: a carried-up subtree may be lower than its round.
    """
    n = int(num_leaves)
    out = np.full((max(2 * n - 1, 0), 3), PAD_NODE, np.int32)
    out[0::2, LEVEL] = 0
    for t in range(n - 1):
        level = 1 + _trailing_ones(t)
        half = 1 << (level - 1)
        start = t + 1 - half
        out[2 * t + 1, LEFT] = 2 * start if level == 1 else 2 * (start + (half >> 1) - 1) + 1
        rest = min(half, n - t - 1)
        out[2 * t + 1, RIGHT] = 2 * (t + 1) if rest == 1 else 2 * (t + (1 << (_ceil_log2(rest) - 1))) + 1
        out[2 * t + 1, LEVEL] = level
    return out


def _trailing_ones(t):
    count = 0
    while t & 1:
        t >>= 1
        count += 1
    return count


def _ceil_log2(r):
    return max(int(r - 1).bit_length(), 0)


def tree_height(arrays):
    """The highest level of a tree array (0 for one leaf, -1 for an empty sentence)."""
    return int(arrays[:, LEVEL].max()) if len(arrays) else -1


def element_labels(tokens, count):
    """Labels of the `count` elements a model attends over, from the sentence's `tokens`.

    `count == 2n - 1`: the in-order tree nodes (token t at node 2t; the phrase joining tokens t and
    t + 1, node 2t + 1, is "•"); `count == 2n`: Paria et al.'s S_e = (s_1, v_1, ..., s_n, v_n) ("s:" the
    word layer, "v:" the bi-LSTM); otherwise the tokens themselves (cut, or padded with "?").
    """
    tokens = list(tokens)
    n = len(tokens)
    if n and count == 2 * n - 1:
        return [label for t, token in enumerate(tokens) for label in ([] if t == 0 else ["•"]) + [token]]
    if n and count == 2 * n:
        return [label for token in tokens for label in (f"s:{token}", f"v:{token}")]
    return tokens[:count] + ["?"] * (count - min(n, count))


def pad_trees(arrays, length=None):
    """Stacks tree arrays into `int32 [B, 2L - 1, 3]`, padded with -1 (L = `length` or the longest)."""
    if length is None:
        length = max([(len(a) + 1) // 2 for a in arrays] + [1])
    out = np.full((len(arrays), max(2 * length - 1, 0), 3), PAD_NODE, np.int32)
    for i, a in enumerate(arrays):
        out[i, :len(a)] = a
    return out


def sentence_tree(parse, tokens, pair_id=None, sentence=None, lowercase=True, max_length=None):
    """The tree arrays of one sentence from its binary parse, checked against its tokens.

    Args:
        parse: the binary parse string.
        tokens: the sentence's tokens (from `Tokenizer`), which the parse's leaves must equal (compared
            lowercased when `lowercase`).
        pair_id, sentence: named in errors.
        lowercase: compare lowercased.
        max_length: truncate the tree to the first `max_length` tokens (as the ids are).

    Raises:
        TreeFormatError: malformed parse, or leaves that differ from the tokens (naming the pair).
    """
    tree = parse_binary_parse(parse, pair_id, sentence)
    parse_leaves = leaves(tree)
    norm = (lambda w: w.lower()) if lowercase else (lambda w: w)  # noqa: E731
    if [norm(w) for w in parse_leaves] != [norm(w) for w in tokens]:
        raise TreeFormatError(
            f"{_where(pair_id, sentence)}: the parse's leaves {parse_leaves} do not match the tokens {list(tokens)}")
    if max_length is not None:
        tree = truncate(tree, max_length)
    return tree_arrays(tree)


def example_trees(examples, tokenizer, max_premise_length=None, max_hypothesis_length=None,
                  trees="syntactic", on_error="raise", max_depth=None, token_lists=None):
    """Tree arrays for the premise and hypothesis of every example.

    Args:
        examples: dicts with `"premise"`, `"hypothesis"`, `"pair_id"` and, for `"syntactic"`,
            `"premise_binary_parse"`, `"hypothesis_binary_parse"` (as `zoo.data.snli.load_snli` gives).
        tokenizer: the `Tokenizer` whose tokens the ids come from.
        max_premise_length, max_hypothesis_length: truncation, as for the ids.
        trees: `"syntactic"` (the parses) or `"complete"` (complete binary trees over the tokens).
        on_error: `"raise"` (a `TreeFormatError` naming the pair) or `"complete"`: use the complete tree
            for a sentence whose parse is missing, malformed, does not match its tokens or is deeper than
            `max_depth` (counted in the report).
        max_depth: the model's number of tree levels; a deeper tree is an error (see `on_error`).
        token_lists: `{"premise": [[token, ...], ...], "hypothesis": ...}` if already tokenized.

    Returns:
        `(premise_trees, hypothesis_trees, report)`: lists of int32 `[2n - 1, 3]` arrays and
        `{"fallback_complete": n, "max_level": k}`.
    """
    if trees not in ("syntactic", "complete"):
        raise ValueError(f"trees must be 'syntactic' or 'complete', got {trees!r}")
    if on_error not in ("raise", "complete"):
        raise ValueError(f"on_error must be 'raise' or 'complete', got {on_error!r}")
    out = {"premise": [], "hypothesis": []}
    report = {"fallback_complete": 0, "max_level": -1}
    for key, max_length in (("premise", max_premise_length), ("hypothesis", max_hypothesis_length)):
        tokens_of = (token_lists or {}).get(key) or tokenizer.tokenize_batch([ex[key] for ex in examples])
        for ex, tokens in zip(examples, tokens_of):
            n = len(tokens) if max_length is None else min(len(tokens), max_length)
            arrays = None
            if trees == "syntactic":
                try:
                    parse = ex.get(f"{key}_binary_parse") or ""
                    if not parse.strip():
                        raise TreeFormatError(f"{_where(ex.get('pair_id'), key)}: no binary parse")
                    arrays = sentence_tree(parse, tokens, ex.get("pair_id"), key,
                                           lowercase=getattr(tokenizer, "lowercase", True), max_length=max_length)
                    if max_depth is not None and tree_height(arrays) > max_depth:
                        raise TreeFormatError(f"{_where(ex.get('pair_id'), key)}: the parse is {tree_height(arrays)} "
                                              f"levels deep, the model computes max_depth={max_depth}")
                except TreeFormatError:
                    if on_error == "raise":
                        raise
                    arrays = None
                    report["fallback_complete"] += 1
            if arrays is None:
                arrays = complete_tree_arrays(n)
            report["max_level"] = max(report["max_level"], tree_height(arrays))
            out[key].append(arrays)
    return out["premise"], out["hypothesis"], report


def pair_tree_inputs(pairs, tokenizer, padded_lengths, max_lengths=None, max_depth=None, pair_ids=None):
    """The tree inputs of sentence pairs that may carry their binary parses (for prediction).

    Args:
        pairs: `(premise, hypothesis)` or `(premise, hypothesis, premise_binary_parse,
            hypothesis_binary_parse)` tuples; a missing or blank parse gets the complete binary tree over
            the sentence's tokens (as an exported model does).
        tokenizer: the run's `Tokenizer`.
        padded_lengths: `{"premise": Lp, "hypothesis": Lh}`, the padded lengths of the token ids.
        max_lengths: `{"premise": n or None, "hypothesis": n or None}`, the truncation of the ids.
        max_depth: the model's number of levels; a deeper parse is an error.
        pair_ids: names of the pairs in errors (default: their index).

    Returns:
        `{"premise_tree": int32 [N, 2Lp - 1, 3], "hypothesis_tree": int32 [N, 2Lh - 1, 3]}`.

    Raises:
        TreeFormatError: a malformed parse, leaves that differ from the tokens, or a tree deeper than
            `max_depth`, naming the pair and the sentence.
    """
    pairs = [tuple(pair) for pair in pairs]
    max_lengths = max_lengths or {}
    out = {}
    for side, key in enumerate(("premise", "hypothesis")):
        max_length = max_lengths.get(key)
        token_lists = tokenizer.tokenize_batch([pair[side] for pair in pairs])
        arrays = []
        for i, (pair, tokens) in enumerate(zip(pairs, token_lists)):
            pair_id = pair_ids[i] if pair_ids is not None else i
            parse = pair[2 + side] if len(pair) > 2 + side else ""
            if not (parse or "").strip():
                n = len(tokens) if max_length is None else min(len(tokens), max_length)
                arrays.append(complete_tree_arrays(n))
                continue
            tree = sentence_tree(parse, tokens, pair_id, key, lowercase=getattr(tokenizer, "lowercase", True),
                                 max_length=max_length)
            if max_depth is not None and tree_height(tree) > max_depth:
                raise TreeFormatError(f"{_where(pair_id, key)}: the parse is {tree_height(tree)} levels deep, "
                                      f"the model computes max_depth={max_depth}")
            arrays.append(tree)
        out[f"{key}_tree"] = pad_trees(arrays, padded_lengths[key])
    return out


def make_tree_dataset(examples, vocab, tokenizer, batch_size, trees="syntactic", shuffle=False, seed=0,
                      max_premise_length=None, max_hypothesis_length=None, bucket=True, cache=True,
                      drop_remainder=False, on_error="raise", max_depth=None, report=None, grid=None,
                      shape_log=None, epoch=None):
    """`zoo.data.pipeline.make_dataset` with the parse trees as two more inputs.

    With `trees="complete"` the tree models build their trees in-model, so this is `make_dataset`.
    With `"syntactic"` the features are `{"premise": int32 [B, Lp], "hypothesis": int32 [B, Lh],
    "premise_tree": int32 [B, 2Lp - 1, 3], "hypothesis_tree": int32 [B, 2Lh - 1, 3]}` (see the module
    docstring); ids come from the same tokenizer and vocabulary as `make_dataset`'s, tokenized here in
    Python to check each parse's leaves against them. Elements are `(features, labels, weights)` in the
    shape-stable batches of `make_dataset` (trees padded to 2P - 1 node slots for a premise padded to P).
    Other arguments as for `make_dataset`, plus
    `on_error` and `max_depth` (see `example_trees`); a dict passed as `report` receives the report of
    `example_trees` (how many sentences fell back to complete trees, the deepest tree).
    """
    import tensorflow as tf

    from zoo.data import pipeline

    if trees == "complete":
        return pipeline.make_dataset(examples, vocab, tokenizer, batch_size, shuffle=shuffle, seed=seed,
                                     max_premise_length=max_premise_length,
                                     max_hypothesis_length=max_hypothesis_length, bucket=bucket, cache=cache,
                                     drop_remainder=drop_remainder, grid=grid, shape_log=shape_log, epoch=epoch)
    token_lists = {key: tokenizer.tokenize_batch([ex[key] for ex in examples]) for key in ("premise", "hypothesis")}
    premise_trees, hypothesis_trees, tree_report = example_trees(
        examples, tokenizer, max_premise_length, max_hypothesis_length, trees=trees, on_error=on_error,
        max_depth=max_depth, token_lists=token_lists)
    if report is not None:
        report.update(tree_report)
    features = {}
    for key, max_length, tree_list in (("premise", max_premise_length, premise_trees),
                                       ("hypothesis", max_hypothesis_length, hypothesis_trees)):
        ids = [vocab.ids(tokens[:max_length] if max_length is not None else tokens) for tokens in token_lists[key]]
        features[key] = tf.RaggedTensor.from_row_lengths(
            np.asarray([i for row in ids for i in row], np.int32), np.asarray([len(r) for r in ids], np.int64))
        features[f"{key}_tree"] = tf.RaggedTensor.from_row_lengths(
            np.concatenate(tree_list + [np.zeros((0, 3), np.int32)]), np.asarray([len(t) for t in tree_list], np.int64))
    labels = np.asarray([ex["label"] for ex in examples], np.int32)
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    # Unbatched ragged rows have a RaggedTensorSpec of ragged rank 0; an identity map makes them plain tensors.
    ds = ds.map(lambda x, y: ({k: tf.identity(v) for k, v in x.items()}, y))
    if cache:
        ds = ds.cache()
    if shuffle:
        ds = pipeline.shuffle_by_epoch(ds, max(len(examples), 1), seed, epoch)
    grid = grid or pipeline.LengthGrid.for_max_lengths(max_premise_length, max_hypothesis_length)
    num_batches = pipeline.count_batches(features["premise"].row_lengths().numpy(),
                                         features["hypothesis"].row_lengths().numpy(), grid, batch_size, bucket,
                                         drop_remainder)
    padding_values = ({"premise": pipeline.PAD_ID, "hypothesis": pipeline.PAD_ID, "premise_tree": PAD_NODE,
                       "hypothesis_tree": PAD_NODE}, 0)

    def padded_shapes(p, h):  # a sentence of L tokens has 2L - 1 node slots
        return ({"premise": [p], "hypothesis": [h], "premise_tree": [tf.where(p < 0, p, 2 * p - 1), 3],
                 "hypothesis_tree": [tf.where(h < 0, h, 2 * h - 1), 3]}, [])

    ds = pipeline.pad_and_batch(ds, batch_size, grid, padded_shapes, padding_values, bucket, drop_remainder,
                                shape_log, num_batches=num_batches)

    def finish(x, y, w):  # exactly 2L - 1 node slots, also where a batch pads to its longest sentence
        x = dict(x)
        for key in ("premise", "hypothesis"):
            slots = 2 * tf.shape(x[key])[1] - 1
            tree = x[f"{key}_tree"][:, :slots]
            x[f"{key}_tree"] = tf.pad(tree, [[0, 0], [0, slots - tf.shape(tree)[1]], [0, 0]],
                                      constant_values=PAD_NODE)
        return x, y, w

    return pipeline.with_input_options(ds.map(finish)).prefetch(pipeline.PREFETCH)


# In graph (TensorFlow): the same trees for serving ------------------------------------------------
# Status of each row of `tf_parse_trees`; the messages match `parse_binary_parse` / `sentence_tree`.
PARSE_OK, PARSE_BLANK, PARSE_UNBALANCED, PARSE_EMPTY_BRACKETS, PARSE_TEXT_AFTER_ROOT, PARSE_MISMATCH, \
    PARSE_TOO_DEEP = range(7)
PARSE_STATUS_MESSAGES = (
    "ok", "no binary parse (complete binary tree used)", "unbalanced brackets", "empty brackets ( )",
    "text after the root bracket", "the leaves of the parse do not match the tokens of the sentence",
    "the parse is deeper than max_depth of the model")  # no quotes: TF escapes them in error messages


def tf_parse_trees(parses, tokens, length, lowercase=True, max_length=None, max_depth=None):
    """`sentence_tree` in graph: tree arrays of a batch of binary parse strings, for exported models.

    Each row is parsed by a small shift-reduce loop over its bracket tokens (`tf.while_loop`, TF builtin
    ops only, so the SavedModel serves from TF Serving): a leaf pushes node 2t, a ")" pops the subtrees
    of its bracket and joins them right to left (unary brackets collapse; a wider bracket is binarized
    right-branching), giving the internal node 2(last leaf of the left part) + 1 at level 1 + max(levels).

    Args:
        parses: tf.string `[B]`, e.g. `"( ( Two women ) ( ( are sleeping ) . ) )"`; blank for none.
        tokens: tf.string ragged `[B, None]`: the sentence's tokens (before truncation), which the
            leaves must equal (compared lowercased when `lowercase`).
        length: the padded token length L of the batch (int scalar): the output has 2L - 1 node slots.
        lowercase: compare lowercased leaves (the tokenizer's `lowercase`).
        max_length: keep the first `max_length` leaves (the truncation of the token ids), or None.
        max_depth: the model's number of levels; a deeper tree gets status `PARSE_TOO_DEEP`.

    Returns:
        `(trees, status)`: int32 `[B, 2L - 1, 3]` (rows with a status other than `PARSE_OK` hold
        padding) and int32 `[B]`, one of the `PARSE_*` codes (see `PARSE_STATUS_MESSAGES`).
    """
    import tensorflow as tf

    parses = tf.convert_to_tensor(parses, tf.string)
    length = tf.cast(length, tf.int32)
    slots = tf.maximum(2 * length - 1, 0)
    max_leaves = tf.constant(2 ** 30 if max_length is None else int(max_length), tf.int32)
    parse_tokens = tf.strings.split(parses)                                      # ragged [B, None]

    def parse_one(row):
        kind = tf.where(tf.equal(row, "("), 0, tf.where(tf.equal(row, ")"), 1, 2))  # 0 "(", 1 ")", 2 leaf
        size = tf.size(row)
        # The stack holds brackets (flag 0) and finished subtrees (flag 1): [flag, node, level, last leaf].
        stack = tf.zeros([size + 1, 4], tf.int32)
        nodes = tf.fill([2 * size + 1, 3], PAD_NODE)
        empty_brackets = tf.reduce_any(tf.logical_and(tf.equal(kind[:-1], 0), tf.equal(kind[1:], 1)))

        def push(stack, sp, entry):
            return tf.tensor_scatter_nd_update(stack, [[sp]], [entry]), sp + 1

        def on_open(i, sp, n, stack, nodes, status):
            stack, sp = push(stack, sp, tf.zeros([4], tf.int32))
            return i + 1, sp, n, stack, nodes, status

        def on_leaf(i, sp, n, stack, nodes, status):
            def keep():
                new_stack, new_sp = push(stack, sp, tf.stack([1, 2 * n, 0, n]))
                return new_stack, new_sp, tf.tensor_scatter_nd_update(nodes, [[2 * n]], [[PAD_NODE, PAD_NODE, 0]])
            stack, sp, nodes = tf.cond(n < max_leaves, keep, lambda: (stack, sp, nodes))
            return i + 1, sp, n + 1, stack, nodes, status

        def on_close(i, sp, n, stack, nodes, status):
            positions = tf.range(tf.shape(stack)[0])
            is_bracket = tf.logical_and(tf.equal(stack[:, 0], 0), positions < sp)
            top = tf.reduce_max(tf.where(is_bracket, positions, -1))             # the innermost open "("

            def unbalanced():
                return sp, stack, nodes, tf.where(tf.equal(status, PARSE_OK), PARSE_UNBALANCED, status)

            def reduce():
                def join(j, current, nodes):                                     # (stack[j], current)
                    left = stack[j]
                    index = 2 * left[3] + 1
                    level = 1 + tf.maximum(left[2], current[2])
                    nodes = tf.tensor_scatter_nd_update(nodes, [[index]], [tf.stack([left[1], current[1], level])])
                    return j - 1, tf.stack([1, index, level, current[3]]), nodes

                def with_children():
                    _, joined, new_nodes = tf.while_loop(
                        lambda j, current, nodes: j > top, join, (sp - 2, stack[sp - 1], nodes))
                    new_stack = tf.tensor_scatter_nd_update(stack, [[top]], [joined])
                    return top + 1, new_stack, new_nodes

                # A bracket whose leaves were all truncated away leaves nothing on the stack.
                new_sp, new_stack, new_nodes = tf.cond(sp - 1 > top, with_children, lambda: (top, stack, nodes))
                return new_sp, new_stack, new_nodes, status

            sp, stack, nodes, status = tf.cond(top < 0, unbalanced, reduce)
            return i + 1, sp, n, stack, nodes, status

        def body(i, sp, n, stack, nodes, status):
            return tf.switch_case(kind[i], [lambda: on_open(i, sp, n, stack, nodes, status),
                                            lambda: on_close(i, sp, n, stack, nodes, status),
                                            lambda: on_leaf(i, sp, n, stack, nodes, status)])

        status = tf.where(empty_brackets, PARSE_EMPTY_BRACKETS, PARSE_OK)
        _, sp, n, stack, nodes, status = tf.while_loop(
            lambda i, sp, n, stack, nodes, status: tf.logical_and(i < size, tf.equal(status, PARSE_OK)),
            body, (0, 0, 0, stack, nodes, status))
        live = stack[:sp]
        open_left = tf.reduce_any(tf.equal(live[:, 0], 0))
        status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), open_left), PARSE_UNBALANCED, status)
        status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), sp > 1), PARSE_TEXT_AFTER_ROOT, status)
        status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), tf.equal(size, 0)), PARSE_BLANK, status)
        if max_depth is not None:
            too_deep = tf.reduce_max(nodes[:, LEVEL]) > int(max_depth)
            status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), too_deep), PARSE_TOO_DEEP, status)
        nodes = tf.concat([nodes, tf.fill([tf.maximum(slots - tf.shape(nodes)[0], 0), 3], PAD_NODE)], 0)[:slots]
        nodes = tf.where(tf.equal(status, PARSE_OK), nodes, PAD_NODE)
        return nodes, status

    trees, status = tf.map_fn(parse_one, parse_tokens, fn_output_signature=(
        tf.TensorSpec([None, 3], tf.int32), tf.TensorSpec([], tf.int32)))
    trees = tf.reshape(trees, [-1, slots, 3])

    # The leaves must be the sentence's tokens (as `sentence_tree` checks).
    is_leaf = tf.logical_and(tf.not_equal(parse_tokens, "("), tf.not_equal(parse_tokens, ")"))
    parse_leaves = tf.ragged.boolean_mask(parse_tokens, is_leaf)
    tokens = tf.RaggedTensor.from_tensor(tokens) if not isinstance(tokens, tf.RaggedTensor) else tokens
    if lowercase:
        parse_leaves = tf.strings.lower(parse_leaves, encoding="utf-8")
        tokens = tf.strings.lower(tokens, encoding="utf-8")
    dense_leaves, dense_tokens = parse_leaves.to_tensor(""), tokens.to_tensor("")
    width = tf.maximum(tf.shape(dense_leaves)[1], tf.shape(dense_tokens)[1])

    def widen(x):
        return tf.pad(x, [[0, 0], [0, width - tf.shape(x)[1]]], constant_values="")

    same = tf.logical_and(tf.equal(parse_leaves.row_lengths(), tokens.row_lengths()),
                          tf.reduce_all(tf.equal(widen(dense_leaves), widen(dense_tokens)), axis=1))
    mismatch = tf.logical_and(tf.equal(status, PARSE_OK), tf.logical_not(same))
    status = tf.where(mismatch, PARSE_MISMATCH, status)
    trees = tf.where(tf.reshape(tf.equal(status, PARSE_OK), [-1, 1, 1]), trees, PAD_NODE)
    return trees, status


def tf_parse_error_check(status, field):
    """An op that fails with `FIELD[ROW]: MESSAGE` for the first row of `status` that is an error
    (blank parses are not errors); run it as a control dependency of the trees.

    Args:
        status: int32 `[B]` from `tf_parse_trees`.
        field: the request field named in the message, e.g. `"premise_binary_parse"`.
    """
    import tensorflow as tf

    bad = tf.logical_and(tf.not_equal(status, PARSE_OK), tf.not_equal(status, PARSE_BLANK))
    row = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int32)
    code = tf.gather(tf.concat([status, [PARSE_OK]], 0), row)
    message = tf.strings.join([field, "[", tf.strings.as_string(row), "]: ",
                               tf.gather(tf.constant(PARSE_STATUS_MESSAGES), code)])
    return tf.debugging.Assert(tf.logical_not(tf.reduce_any(bad)), [message])
