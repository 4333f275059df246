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

This module is numpy only; the tf.data batches of trees are `zoo.data.tree_pipeline.make_tree_dataset`, and
the same trees computed in graph for exported models `zoo.data.tree_graph.tf_parse_trees`.

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
