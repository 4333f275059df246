"""tf.data input pipeline: in-graph tokenization and lookup, truncation, shape-stable batches.

Batches come in a small fixed set of shapes (`zoo.data.batching.LengthGrid`): both sentences are padded
up to length boundaries, and every batch has exactly `batch_size` rows, a short last batch being filled
up with rows weighted 0: empty sentences (every feature its padding value, trees included), which the
packed recurrent loops skip (an epoch of 1,024 shipped pairs is 39 batches of 32 rows, 18% of them filler,
which were copies of a real pair, computed in full for nothing).
Elements are `(features, labels, weights)`; give the weights to Keras (`fit`, `evaluate` read them as
sample weights) and drop rows of weight 0 from results.

Example:
```python
ds = make_dataset(splits["train"], vocab, Tokenizer(), batch_size=32, shuffle=True, seed=1,
                  max_premise_length=100, max_hypothesis_length=100)
features, labels, weights = next(iter(ds))
# {"premise": int32 [32, P], "hypothesis": int32 [32, H]}, int32 [32], float32 [32] (0 = filler row)
ds.cardinality()   # the number of batches of an epoch (known in advance: Keras shows totals and an ETA)
```

Shuffling draws each epoch's order from `(seed, epoch)` when an `epoch` variable is given (training sets it
at the start of every epoch, `zoo.training.callbacks.EpochRandomness`), so a run resumed at epoch N sees
the same order as one that was never interrupted; without one, tf.data reshuffles on each iteration.
"""

import os

import numpy as np
import tensorflow as tf

from zoo.data.batching import LengthGrid, count_batches
from zoo.data.trees import pair_tree_inputs
from zoo.data.vocab import PAD_ID

_TOKENIZE_BATCH = 1024
# Fixed where tf.data's autotuner would choose (it is off: `with_input_options`): tokenizing in parallel on
# every core, and two batches ready ahead of the training step.
PARALLEL_CALLS = max(1, os.cpu_count() or 1)
PREFETCH = 2
_EPOCH_GRAPH_SEED = 20_170_601  # the graph seed of `shuffle_by_epoch`'s per-epoch shuffle


def _encode(texts, vocab, tokenizer, max_length):
    """tf.string [B] -> ragged int32 ids [B, None], truncated to `max_length`."""
    ids = vocab.tf_lookup(tokenizer.tf_tokenize(texts))
    return ids if max_length is None else ids[:, :max_length]


def _at_least_one_column(x):
    """Pads a [B, L] batch to L >= 1 so that a batch of empty sentences still has a (PAD) column."""
    return tf.pad(x, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(x)[1])]], constant_values=PAD_ID)


def make_dataset(examples, vocab, tokenizer, batch_size, shuffle=False, seed=0, max_premise_length=None,
                 max_hypothesis_length=None, bucket=True, cache=True, drop_remainder=False, grid=None,
                 shape_log=None, epoch=None):
    """Builds a batched tf.data pipeline from examples (tokenization and lookup run in graph).

    Args:
        examples: list of dicts with `"premise"`, `"hypothesis"` (str) and `"label"` (int).
        vocab: `Vocabulary`.
        tokenizer: `Tokenizer`.
        batch_size: pairs per batch (every batch has exactly this many rows).
        shuffle: shuffle all examples, differently each epoch (seeded by `seed`).
        seed: shuffle seed.
        max_premise_length, max_hypothesis_length: truncate longer sentences (None: keep all tokens).
        bucket: batch pairs of the same grid cell together (each batch then has its cell's shape); else
            consecutive pairs, padded up to the cell of their longest sentences.
        cache: cache the encoded examples in memory (before shuffling).
        drop_remainder: drop short batches instead of filling them up with weight-0 rows (training only:
            the dropped pairs differ from epoch to epoch when shuffling).
        grid: the `LengthGrid` (default: `LengthGrid.for_max_lengths` of the maximum lengths).
        shape_log: a `ShapeLog` that records each batch shape the pipeline produces.
        epoch: a `tf.Variable` (int64) holding the epoch about to be iterated: the shuffle order is then a
            function of `(seed, epoch)` (`shuffle_by_epoch`), so resuming at any epoch gives the same order.

    Returns:
        tf.data.Dataset of `({"premise": int32 [B, P], "hypothesis": int32 [B, H]}, int32 [B], float32 [B])`:
        ids right-padded with PAD_ID, labels, and weights (1 for a pair, 0 for a filler row). Its
        cardinality is the number of batches of an epoch (`zoo.data.batching.count_batches`).
    """
    premises = [ex["premise"] for ex in examples]
    hypotheses = [ex["hypothesis"] for ex in examples]
    labels = np.asarray([ex["label"] for ex in examples], dtype=np.int32)
    ds = tf.data.Dataset.from_tensor_slices((tf.constant(premises, dtype=tf.string, shape=[len(premises)]),
                                             tf.constant(hypotheses, dtype=tf.string, shape=[len(hypotheses)]),
                                             labels))

    def encode(p, h, y):
        return ({"premise": _encode(p, vocab, tokenizer, max_premise_length),
                 "hypothesis": _encode(h, vocab, tokenizer, max_hypothesis_length)}, y)

    ds = ds.batch(_TOKENIZE_BATCH).map(encode, num_parallel_calls=PARALLEL_CALLS).unbatch()
    # Unbatched ragged rows have a RaggedTensorSpec of rank 1; an identity map turns them into plain tensors.
    ds = ds.map(lambda x, y: ({k: tf.identity(v) for k, v in x.items()}, y))
    if cache:
        ds = ds.cache()
    grid = grid or LengthGrid.for_max_lengths(max_premise_length, max_hypothesis_length)
    # One pass over the encoded pairs (it fills the cache) gives their lengths, hence the epoch's batches.
    premise_lengths, hypothesis_lengths = sentence_lengths(ds)
    num_batches = count_batches(premise_lengths, hypothesis_lengths, grid, batch_size, bucket, drop_remainder)
    if shuffle:
        ds = shuffle_by_epoch(ds, max(len(examples), 1), seed, epoch)
    ds = pad_and_batch(ds, batch_size, grid, lambda p, h: ({"premise": [p], "hypothesis": [h]}, []),
                       ({"premise": PAD_ID, "hypothesis": PAD_ID}, 0), bucket, drop_remainder, shape_log,
                       num_batches=num_batches)
    return with_input_options(ds).prefetch(PREFETCH)


def sentence_lengths(ds):
    """The premise and hypothesis lengths (int64 `[N]` each) of an unbatched dataset of `(features, label)`."""
    lengths = ds.map(lambda x, y: (tf.shape(x["premise"])[0], tf.shape(x["hypothesis"])[0]),
                     num_parallel_calls=PARALLEL_CALLS).batch(1 << 16)
    lengths = with_input_options(lengths)  # no autotuner: its sleep would hold up the iterator's end (~2.5 s)
    premise, hypothesis = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for p, h in lengths.as_numpy_iterator():
        premise.append(p.astype(np.int64))
        hypothesis.append(h.astype(np.int64))
    return np.concatenate(premise), np.concatenate(hypothesis)


def shuffle_by_epoch(ds, size, seed, epoch=None):
    """Shuffles `ds` (unbatched, `size` elements) in an order that is a function of `(seed, epoch)`.

    Args:
        ds: the dataset (best cached: it is read once per epoch).
        size: its number of elements (the shuffle buffer holds all of them: a uniform permutation).
        seed: the run's seed.
        epoch: a `tf.Variable` (int64) read when an epoch's iteration starts; None: tf.data's own
            reshuffling on each iteration (the order then depends on how many iterations this process ran).

    Returns:
        the shuffled dataset.
    """
    if epoch is None:
        return ds.shuffle(size, seed=seed, reshuffle_each_iteration=True)

    def one_epoch(value):  # a distinct op seed per (seed, epoch); the same in every process
        # tf.data pairs an op seed with the graph's seed, and cannot compare a tensor op seed when that is 0
        # (`keras.utils.set_random_seed(0)`): this function's own graph gets a fixed one instead.
        tf.compat.v1.get_default_graph().seed = _EPOCH_GRAPH_SEED
        return ds.shuffle(size, seed=tf.constant(int(seed) % 1_000_003, tf.int64) * 1_000_003 + value,
                          reshuffle_each_iteration=False)

    return tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).map(lambda _: epoch.read_value()) \
        .flat_map(one_epoch)


def with_input_options(ds):
    """The options every dataset the trainer feeds to Keras gets.

    - Multi-worker training shards it by data: every worker builds the same batches and takes its slice of
      each, so all take the same number of steps (sharding by file, which tf.data would choose for a
      file-based source, could give workers different numbers of batches and hang them).
    - tf.data's autotuner is off. Its model thread sleeps 10 ms, 20 ms, ... doubling from the moment an
      iterator is made, and destroying the iterator (Keras makes one per epoch) waits for that sleep to
      end: an epoch then ends on the next 10.24 x 2^k seconds after `fit` started instead of after its
      last step (seen with TF 2.21 on a CPU; `scripts/benchmark_training.py` shows before and after with
      `--autotune`). Parallelism and prefetching are fixed instead (`PARALLEL_CALLS`, `PREFETCH`).
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.autotune.enabled = False
    return ds.with_options(options)


def pad_and_batch(ds, batch_size, grid, padded_shapes, padding_values, bucket=True, drop_remainder=False,
                  shape_log=None, num_batches=None):
    """Batches `(features, label)` rows into shape-stable `(features, labels, weights)` batches.

    Args:
        ds: unbatched dataset whose features hold at least `"premise"` and `"hypothesis"` ids.
        batch_size: rows per batch.
        grid: the `LengthGrid` whose boundaries the sentences are padded up to.
        padded_shapes: `f(premise length, hypothesis length) -> padded shapes` of a row (int64 scalars,
            -1 for "the batch's longest"), as for `tf.data.Dataset.padded_batch`.
        padding_values: as for `tf.data.Dataset.padded_batch`.
        bucket: group rows by grid cell; else batch consecutive rows.
        drop_remainder: drop short batches; else fill them up with rows weighted 0 holding `padding_values`
            (empty sentences).
        shape_log: an optional `ShapeLog`.
        num_batches: the batches of an epoch when known (`zoo.data.batching.count_batches`): set as the
            dataset's cardinality, which tf.data cannot infer through `group_by_window`.
    """
    premise_bounds = tf.constant([-1 if b is None else b for b in grid.premise_boundaries], tf.int64)
    hypothesis_bounds = tf.constant([-1 if b is None else b for b in grid.hypothesis_boundaries], tf.int64)

    def index(bounds, length):
        # The first boundary >= length; the last one when every (closed) boundary is shorter.
        closed = tf.logical_or(bounds < 0, length <= bounds)
        return tf.minimum(tf.argmax(tf.cast(closed, tf.int64), output_type=tf.int64),
                          tf.size(bounds, out_type=tf.int64) - 1)

    def lengths(x):
        return tf.cast(tf.shape(x["premise"])[-1], tf.int64), tf.cast(tf.shape(x["hypothesis"])[-1], tf.int64)

    def cell(x, y):
        lp, lh = lengths(x)
        return index(premise_bounds, lp) * tf.size(hypothesis_bounds, out_type=tf.int64) + index(hypothesis_bounds, lh)

    def cell_shapes(key):
        width = tf.size(hypothesis_bounds, out_type=tf.int64)
        return padded_shapes(premise_bounds[key // width], hypothesis_bounds[key % width])

    if bucket:
        ds = ds.group_by_window(
            cell, lambda key, rows: rows.padded_batch(batch_size, padded_shapes=cell_shapes(key),
                                                      padding_values=padding_values,
                                                      drop_remainder=drop_remainder),
            window_size=batch_size)
    else:
        ds = ds.padded_batch(batch_size, padded_shapes=padded_shapes(-1, -1), padding_values=padding_values,
                             drop_remainder=drop_remainder)

        def pad_to_cell(x, y):
            lp, lh = lengths(x)
            shapes, _ = cell_shapes(index(premise_bounds, lp) * tf.size(hypothesis_bounds, out_type=tf.int64)
                                    + index(hypothesis_bounds, lh))
            return {k: _pad_up_to(v, shapes[k], padding_values[0][k]) for k, v in x.items()}, y

        ds = ds.map(pad_to_cell)

    def fill(x, y):
        # filler rows hold every feature's padding value: empty sentences (and empty trees), weighted 0
        rows = tf.shape(y)[0]
        missing = batch_size - rows
        x = {k: tf.pad(v, [[0, missing]] + [[0, 0]] * (v.shape.rank - 1), constant_values=padding_values[0][k])
             for k, v in x.items()}
        y = tf.pad(y, [[0, missing]], constant_values=padding_values[1])
        weights = tf.concat([tf.ones([rows]), tf.zeros([missing])], axis=0)
        x = {k: _at_least_one_column(v) if k in ("premise", "hypothesis") else v for k, v in x.items()}
        if shape_log is not None:
            x = shape_log.watch(x)
        return x, y, weights

    ds = ds.map(fill)
    if num_batches is not None:
        ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches))
    return ds


def _pad_up_to(tensor, shape, value):
    """Pads `tensor` [B, d1, ...] at the end of each dimension up to `shape` [d1, ...] (-1: unchanged)."""
    shape = tf.cast(tf.convert_to_tensor(shape, tf.int64), tf.int32)
    current = tf.shape(tensor)[1:]
    extra = tf.where(shape < 0, 0, tf.maximum(shape - current, 0))
    paddings = tf.concat([[[0, 0]], tf.stack([tf.zeros_like(extra), extra], axis=1)], axis=0)
    return tf.pad(tensor, paddings, constant_values=tf.cast(value, tensor.dtype))


class ShapeLog:
    """Records the distinct batch shapes a pipeline produces (what XLA compiles a step for).

    `watch(features)` returns the features unchanged after noting the shapes of their premise and
    hypothesis ids, so the count is what the pipeline really produced, not a prediction of it.
    """

    def __init__(self):
        self.shapes = set()

    def _record(self, premise_shape, hypothesis_shape):
        self.shapes.add((int(premise_shape[0]), int(premise_shape[1]), int(hypothesis_shape[1])))
        return np.int32(0)

    def watch(self, features):
        done = tf.numpy_function(self._record, [tf.shape(features["premise"]), tf.shape(features["hypothesis"])],
                                 tf.int32, stateful=True)
        with tf.control_dependencies([done]):
            return {k: tf.identity(v) for k, v in features.items()}

    @property
    def count(self):
        return len(self.shapes)

    def describe(self):
        """e.g. `3 shape(s): 32x14/10, 32x14/20, 32x22/10` (batch x premise length / hypothesis length)."""
        return f"{len(self.shapes)} shape(s): " + ", ".join(f"{b}x{p}/{h}" for b, p, h in sorted(self.shapes))


def encode_pairs(pairs, vocab, tokenizer, max_premise_length=None, max_hypothesis_length=None):
    """Encodes (premise, hypothesis) pairs into padded id arrays, with the same TF tokenizer and lookup.

    Args:
        pairs: list of `(premise, hypothesis)` strings.
        vocab: `Vocabulary`.
        tokenizer: `Tokenizer`.
        max_premise_length, max_hypothesis_length: truncate longer sentences.

    Returns:
        `{"premise": int32 np.ndarray [N, Lp], "hypothesis": int32 np.ndarray [N, Lh]}`, right-padded with
        PAD_ID (at least one column).
    """
    out = {}
    for key, index, max_length in (("premise", 0, max_premise_length), ("hypothesis", 1, max_hypothesis_length)):
        texts = tf.constant([pair[index] for pair in pairs], dtype=tf.string, shape=[len(pairs)])
        ids = _encode(texts, vocab, tokenizer, max_length).to_tensor(default_value=PAD_ID)
        out[key] = _at_least_one_column(ids).numpy().astype(np.int32)
    return out


def encode_model_inputs(pairs, vocab, tokenizer, max_premise_length=None, max_hypothesis_length=None,
                        parse_trees=False, max_depth=None, pair_ids=None):
    """A model's inputs for raw pairs, truncated like its training data: `encode_pairs`, plus the parse
    trees of a model that reads them.

    Args:
        pairs: `(premise, hypothesis)` or, for parse trees, `(premise, hypothesis, premise_binary_parse,
            hypothesis_binary_parse)` tuples (a missing or blank parse gets the complete binary tree).
        vocab, tokenizer: the run's.
        max_premise_length, max_hypothesis_length: truncate longer sentences.
        parse_trees: add `premise_tree` / `hypothesis_tree` (`zoo.data.trees.pair_tree_inputs`).
        max_depth: the deepest tree the model reads.
        pair_ids: names of the pairs in parse errors (default: their index).

    Returns:
        `{"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}`, plus `"premise_tree"` and
        `"hypothesis_tree"` int32 `[N, 2L - 1, 3]` with `parse_trees`.

    Raises:
        zoo.data.trees.TreeFormatError: a malformed parse (naming the pair).
    """
    pairs = [tuple(pair) for pair in pairs]
    max_lengths = {"premise": max_premise_length, "hypothesis": max_hypothesis_length}
    inputs = encode_pairs([pair[:2] for pair in pairs], vocab, tokenizer, max_premise_length=max_premise_length,
                          max_hypothesis_length=max_hypothesis_length)
    if parse_trees:
        inputs.update(pair_tree_inputs(pairs, tokenizer, {key: inputs[key].shape[1] for key in max_lengths},
                                       max_lengths, max_depth=max_depth, pair_ids=pair_ids))
    return inputs
