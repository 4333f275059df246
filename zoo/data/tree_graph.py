"""The parse trees of `zoo.data.trees` computed in graph (TensorFlow builtin ops only), for exported models:
a SavedModel served by TF Serving parses the binary parses of its requests itself.

Example:
```python
trees, status = tf_parse_trees(parses, tokens, length, lowercase=True)
with tf.control_dependencies([tf_parse_error_check(status, "premise_binary_parse")]):
    trees = tf.identity(trees)
```
"""

import tensorflow as tf

from zoo.constants import LEVEL, PAD_NODE

# Status of each row of `tf_parse_trees`; the messages match `parse_binary_parse` / `sentence_tree`.
PARSE_OK, PARSE_BLANK, PARSE_UNBALANCED, PARSE_EMPTY_BRACKETS, PARSE_TEXT_AFTER_ROOT, PARSE_MISMATCH, \
    PARSE_TOO_DEEP = range(7)
PARSE_STATUS_MESSAGES = (
    "ok", "no binary parse (complete binary tree used)", "unbalanced brackets", "empty brackets ( )",
    "text after the root bracket", "the leaves of the parse do not match the tokens of the sentence",
    "the parse is deeper than max_depth of the model")  # no quotes: TF escapes them in error messages
_OPEN, _CLOSE, _LEAF = 0, 1, 2  # the kinds of a parse's tokens


def tf_parse_trees(parses, tokens, length, lowercase=True, max_length=None, max_depth=None):
    """`zoo.data.trees.sentence_tree` in graph: tree arrays of a batch of binary parse strings.

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
    parses = tf.convert_to_tensor(parses, tf.string)
    slots = tf.maximum(2 * tf.cast(length, tf.int32) - 1, 0)
    max_leaves = tf.constant(2 ** 30 if max_length is None else int(max_length), tf.int32)
    parse_tokens = tf.strings.split(parses)                                      # ragged [B, None]
    trees, status = tf.map_fn(lambda row: _parse_row(row, max_leaves, slots, max_depth), parse_tokens,
                              fn_output_signature=(tf.TensorSpec([None, 3], tf.int32), tf.TensorSpec([], tf.int32)))
    trees = tf.reshape(trees, [-1, slots, 3])
    mismatch = tf.logical_and(tf.equal(status, PARSE_OK),
                              tf.logical_not(_leaves_match_tokens(parse_tokens, tokens, lowercase)))
    status = tf.where(mismatch, PARSE_MISMATCH, status)
    trees = tf.where(tf.reshape(tf.equal(status, PARSE_OK), [-1, 1, 1]), trees, PAD_NODE)
    return trees, status


def _parse_row(row, max_leaves, slots, max_depth):
    """The node arrays `[slots, 3]` (padding unless the status is `PARSE_OK`) and status of one parse."""
    kind = tf.where(tf.equal(row, "("), _OPEN, tf.where(tf.equal(row, ")"), _CLOSE, _LEAF))
    size = tf.size(row)
    # The stack holds brackets (flag 0) and finished subtrees (flag 1): [flag, node, level, last leaf].
    stack = tf.zeros([size + 1, 4], tf.int32)
    nodes = tf.fill([2 * size + 1, 3], PAD_NODE)
    empty_brackets = tf.reduce_any(tf.logical_and(tf.equal(kind[:-1], _OPEN), tf.equal(kind[1:], _CLOSE)))
    status = tf.where(empty_brackets, PARSE_EMPTY_BRACKETS, PARSE_OK)

    def step(i, sp, n, stack, nodes, status):
        state = (i, sp, n, stack, nodes, status)
        return tf.switch_case(kind[i], [lambda: _on_open(*state), lambda: _on_close(*state),
                                        lambda: _on_leaf(*state, max_leaves)])

    _, sp, n, stack, nodes, status = tf.while_loop(
        lambda i, sp, n, stack, nodes, status: tf.logical_and(i < size, tf.equal(status, PARSE_OK)),
        step, (0, 0, 0, stack, nodes, status))
    status = _final_status(status, stack[:sp], sp, size)
    if max_depth is not None:
        too_deep = tf.reduce_max(nodes[:, LEVEL]) > int(max_depth)
        status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), too_deep), PARSE_TOO_DEEP, status)
    nodes = tf.concat([nodes, tf.fill([tf.maximum(slots - tf.shape(nodes)[0], 0), 3], PAD_NODE)], 0)[:slots]
    return tf.where(tf.equal(status, PARSE_OK), nodes, PAD_NODE), status


def _final_status(status, live, sp, size):
    """The status once every token is read: a bracket left open, more than one root, or no token at all."""
    open_left = tf.reduce_any(tf.equal(live[:, 0], 0))
    status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), open_left), PARSE_UNBALANCED, status)
    status = tf.where(tf.logical_and(tf.equal(status, PARSE_OK), sp > 1), PARSE_TEXT_AFTER_ROOT, status)
    return tf.where(tf.logical_and(tf.equal(status, PARSE_OK), tf.equal(size, 0)), PARSE_BLANK, status)


def _push(stack, sp, entry):
    return tf.tensor_scatter_nd_update(stack, [[sp]], [entry]), sp + 1


def _on_open(i, sp, n, stack, nodes, status):
    """"(": push a bracket."""
    stack, sp = _push(stack, sp, tf.zeros([4], tf.int32))
    return i + 1, sp, n, stack, nodes, status


def _on_leaf(i, sp, n, stack, nodes, status, max_leaves):
    """A leaf: push the subtree of node 2n (unless the leaf is truncated away)."""
    def keep():
        new_stack, new_sp = _push(stack, sp, tf.stack([1, 2 * n, 0, n]))
        return new_stack, new_sp, tf.tensor_scatter_nd_update(nodes, [[2 * n]], [[PAD_NODE, PAD_NODE, 0]])

    stack, sp, nodes = tf.cond(n < max_leaves, keep, lambda: (stack, sp, nodes))
    return i + 1, sp, n + 1, stack, nodes, status


def _on_close(i, sp, n, stack, nodes, status):
    """")": join the subtrees above the innermost open bracket into one, in its place."""
    positions = tf.range(tf.shape(stack)[0])
    is_bracket = tf.logical_and(tf.equal(stack[:, 0], 0), positions < sp)
    top = tf.reduce_max(tf.where(is_bracket, positions, -1))             # the innermost open "("

    def unbalanced():
        return sp, stack, nodes, tf.where(tf.equal(status, PARSE_OK), PARSE_UNBALANCED, status)

    def reduce():
        new_sp, new_stack, new_nodes = _reduce_bracket(stack, sp, top, nodes)
        return new_sp, new_stack, new_nodes, status

    sp, stack, nodes, status = tf.cond(top < 0, unbalanced, reduce)
    return i + 1, sp, n, stack, nodes, status


def _reduce_bracket(stack, sp, top, nodes):
    """Joins the subtrees `stack[top + 1:sp]` right to left into one at `stack[top]`; returns the new
    stack pointer, stack and nodes."""
    def join(j, current, nodes):                                         # (stack[j], current)
        left = stack[j]
        index = 2 * left[3] + 1
        level = 1 + tf.maximum(left[2], current[2])
        nodes = tf.tensor_scatter_nd_update(nodes, [[index]], [tf.stack([left[1], current[1], level])])
        return j - 1, tf.stack([1, index, level, current[3]]), nodes

    def with_children():
        _, joined, new_nodes = tf.while_loop(lambda j, current, nodes: j > top, join, (sp - 2, stack[sp - 1], nodes))
        return top + 1, tf.tensor_scatter_nd_update(stack, [[top]], [joined]), new_nodes

    # A bracket whose leaves were all truncated away leaves nothing on the stack.
    return tf.cond(sp - 1 > top, with_children, lambda: (top, stack, nodes))


def _leaves_match_tokens(parse_tokens, tokens, lowercase):
    """bool `[B]`: whether the leaves of each parse are the sentence's tokens (as `sentence_tree` checks)."""
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

    return tf.logical_and(tf.equal(parse_leaves.row_lengths(), tokens.row_lengths()),
                          tf.reduce_all(tf.equal(widen(dense_leaves), widen(dense_tokens)), axis=1))


def tf_parse_error_check(status, field):
    """An op that fails with `FIELD[ROW]: MESSAGE` for the first row of `status` that is an error
    (blank parses are not errors); run it as a control dependency of the trees.

    Args:
        status: int32 `[B]` from `tf_parse_trees`.
        field: the request field named in the message, e.g. `"premise_binary_parse"`.
    """
    bad = tf.logical_and(tf.not_equal(status, PARSE_OK), tf.not_equal(status, PARSE_BLANK))
    row = tf.argmax(tf.cast(bad, tf.int32), output_type=tf.int32)
    code = tf.gather(tf.concat([status, [PARSE_OK]], 0), row)
    message = tf.strings.join([field, "[", tf.strings.as_string(row), "]: ",
                               tf.gather(tf.constant(PARSE_STATUS_MESSAGES), code)])
    return tf.debugging.Assert(tf.logical_not(tf.reduce_any(bad)), [message])
