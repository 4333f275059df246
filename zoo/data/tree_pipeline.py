"""tf.data batches of sentence pairs with their parse trees: `zoo.data.pipeline.make_dataset` plus the
`premise_tree` / `hypothesis_tree` inputs of the tree models (the layout: `zoo.data.trees`).

Example:
```python
ds = make_tree_dataset(splits["train"], vocab, Tokenizer(), batch_size=32, trees="syntactic")
features, labels, weights = next(iter(ds))   # features["premise_tree"]: int32 [32, 2P - 1, 3]
```
"""

import numpy as np
import tensorflow as tf

from zoo.constants import PAD_NODE
from zoo.data.batching import LengthGrid, count_batches
from zoo.data.pipeline import PREFETCH, make_dataset, pad_and_batch, shuffle_by_epoch, with_input_options
from zoo.data.trees import example_trees
from zoo.data.vocab import PAD_ID


def make_tree_dataset(examples, vocab, tokenizer, batch_size, trees="syntactic", shuffle=False, seed=0,
                      max_premise_length=None, max_hypothesis_length=None, bucket=True, cache=True,
                      drop_remainder=False, on_error="raise", max_depth=None, report=None, grid=None,
                      shape_log=None, epoch=None):
    """`zoo.data.pipeline.make_dataset` with the parse trees as two more inputs.

    With `trees="complete"` the tree models build their trees in-model, so this is `make_dataset`.
    With `"syntactic"` the features are `{"premise": int32 [B, Lp], "hypothesis": int32 [B, Lh],
    "premise_tree": int32 [B, 2Lp - 1, 3], "hypothesis_tree": int32 [B, 2Lh - 1, 3]}` (see the
    `zoo.data.trees` docstring); ids come from the same tokenizer and vocabulary as `make_dataset`'s,
    tokenized here in Python to check each parse's leaves against them. Elements are `(features, labels,
    weights)` in the shape-stable batches of `make_dataset` (trees padded to 2P - 1 node slots for a
    premise padded to P). Other arguments as for `make_dataset`, plus `on_error` and `max_depth` (see
    `zoo.data.trees.example_trees`); a dict passed as `report` receives the report of `example_trees` (how
    many sentences fell back to complete trees, the deepest tree).
    """
    if trees == "complete":
        return make_dataset(examples, vocab, tokenizer, batch_size, shuffle=shuffle, seed=seed,
                            max_premise_length=max_premise_length, max_hypothesis_length=max_hypothesis_length,
                            bucket=bucket, cache=cache, drop_remainder=drop_remainder, grid=grid,
                            shape_log=shape_log, epoch=epoch)
    max_lengths = {"premise": max_premise_length, "hypothesis": max_hypothesis_length}
    features, tree_report = _ragged_features(examples, vocab, tokenizer, max_lengths, trees, on_error, max_depth)
    if report is not None:
        report.update(tree_report)
    labels = np.asarray([ex["label"] for ex in examples], np.int32)
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    # Unbatched ragged rows have a RaggedTensorSpec of ragged rank 0; an identity map makes them plain tensors.
    ds = ds.map(lambda x, y: ({k: tf.identity(v) for k, v in x.items()}, y))
    if cache:
        ds = ds.cache()
    if shuffle:
        ds = shuffle_by_epoch(ds, max(len(examples), 1), seed, epoch)
    grid = grid or LengthGrid.for_max_lengths(max_premise_length, max_hypothesis_length)
    num_batches = count_batches(features["premise"].row_lengths().numpy(),
                                features["hypothesis"].row_lengths().numpy(), grid, batch_size, bucket, drop_remainder)
    padding_values = ({"premise": PAD_ID, "hypothesis": PAD_ID, "premise_tree": PAD_NODE,
                       "hypothesis_tree": PAD_NODE}, 0)
    ds = pad_and_batch(ds, batch_size, grid, _padded_shapes, padding_values, bucket, drop_remainder, shape_log,
                       num_batches=num_batches)
    return with_input_options(ds.map(_exact_node_slots)).prefetch(PREFETCH)


def _ragged_features(examples, vocab, tokenizer, max_lengths, trees, on_error, max_depth):
    """The ids and tree arrays of every example as ragged tensors, and the report of `example_trees`."""
    token_lists = {key: tokenizer.tokenize_batch([ex[key] for ex in examples]) for key in max_lengths}
    premise_trees, hypothesis_trees, report = example_trees(
        examples, tokenizer, max_lengths["premise"], max_lengths["hypothesis"], trees=trees, on_error=on_error,
        max_depth=max_depth, token_lists=token_lists)
    features = {}
    for key, tree_list in (("premise", premise_trees), ("hypothesis", hypothesis_trees)):
        max_length = max_lengths[key]
        ids = [vocab.ids(tokens[:max_length] if max_length is not None else tokens) for tokens in token_lists[key]]
        features[key] = tf.RaggedTensor.from_row_lengths(
            np.asarray([i for row in ids for i in row], np.int32), np.asarray([len(r) for r in ids], np.int64))
        features[f"{key}_tree"] = tf.RaggedTensor.from_row_lengths(
            np.concatenate(tree_list + [np.zeros((0, 3), np.int32)]), np.asarray([len(t) for t in tree_list], np.int64))
    return features, report


def _padded_shapes(p, h):
    """The padded shapes of a row whose sentences are padded to p and h tokens: 2L - 1 node slots each."""
    return ({"premise": [p], "hypothesis": [h], "premise_tree": [tf.where(p < 0, p, 2 * p - 1), 3],
             "hypothesis_tree": [tf.where(h < 0, h, 2 * h - 1), 3]}, [])


def _exact_node_slots(x, y, w):
    """Exactly 2L - 1 node slots, also where a batch pads to its longest sentence."""
    x = dict(x)
    for key in ("premise", "hypothesis"):
        slots = 2 * tf.shape(x[key])[1] - 1
        tree = x[f"{key}_tree"][:, :slots]
        x[f"{key}_tree"] = tf.pad(tree, [[0, 0], [0, slots - tf.shape(tree)[1]], [0, 0]], constant_values=PAD_NODE)
    return x, y, w
