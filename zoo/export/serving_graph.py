"""The fast path of `serving_default` on a CPU: `ServingModel` (XLA for small batches, length-sorted chunks for
large ones), used by `zoo.export.saved_model.build_archive` (see docs/speed.md).
"""

import tensorflow as tf

from zoo.data.vocab import PAD_ID

INPUT_NAMES = ("premise", "hypothesis")


def grid_length(length, boundaries):
    """The first of `boundaries` (increasing ints) holding `length`, in graph (`length` itself beyond all)."""
    bounds = tf.constant(boundaries, tf.int32)
    index = tf.searchsorted(bounds, tf.reshape(length, [1]), side="left")[0]
    return tf.where(index < len(boundaries), tf.gather(bounds, tf.minimum(index, len(boundaries) - 1)), length)


def next_power_of_two(n):
    """The smallest power of two >= `n` (int32 scalar tensor >= 1), in graph."""
    n = tf.maximum(n, 1)
    exponent = tf.math.ceil(tf.math.log(tf.cast(n, tf.float32)) / tf.math.log(2.0))
    power = tf.cast(tf.pow(2.0, exponent), tf.int32)
    return tf.where(power < n, power * 2, power)  # float rounding just below an exact power


def length_boundaries(grid):
    """The closed boundaries of a run's length grid (`zoo.runs.datasets.length_grid`) per side:
    `{"premise": [...], "hypothesis": [...]}`."""
    return {"premise": [b for b in grid.premise_boundaries if b is not None],
            "hypothesis": [b for b in grid.hypothesis_boundaries if b is not None]}


class ServingModel(tf.Module):
    """The probabilities of `serving_default` from token ids, by the fastest of three ways on a CPU.

    - `xla_max_batch`: batches of at most this many pairs run an XLA-compiled copy of the model, their ids
      padded up to the run's length grid and the batch up to a power of two (all-padding rows), so the
      compilations are a few shape classes (met by the warm-up requests); XLA removes the per-op overhead
      that dominates small batches.
    - `chunk_size`: larger batches are sorted by sentence length and run in chunks of this many pairs, each
      cropped to its own longest sentences, so that little of the work goes to padding (a batch of 256
      SNLI pairs padded to its longest sentences is about 60% padding); the rows are put back in order.
    - otherwise the plain graph, as `explain`.

    Every row is computed by the same model on its own tokens (padding is masked), so the answers are the
    plain graph's (the tests hold them to the Keras model within 1e-5).

    Args:
        model: the `NLIModel`.
        boundaries: `{"premise": [...], "hypothesis": [...]}`, the lengths XLA pads the ids up to.
        xla_max_batch: the largest batch run through XLA (0: none).
        chunk_size: pairs per chunk of a larger batch (0: no chunks).
        explain_fn: the `tf.function` of `model.explain` the `explain` signature calls (one trace of the
            model then serves both signatures and every chunk).
    """

    def __init__(self, model, boundaries, xla_max_batch=0, chunk_size=0, explain_fn=None):
        super().__init__(name="serving_model")
        self.boundaries = boundaries
        self.xla_max_batch = int(xla_max_batch)
        self.chunk_size = int(chunk_size)
        self.model = model
        self.explain_fn = explain_fn or tf.function(model.explain, autograph=False)
        # xla=True: the bi-LSTMs keep to fixed shapes (zoo.layers.loop_choice)
        self.compiled = None
        if self.xla_max_batch:
            self.compiled = tf.function(
                lambda inputs: tf.cast(model.explain(inputs, xla=True)["probabilities"], tf.float32),
                jit_compile=True, autograph=False)

    def plain(self, inputs):
        return tf.cast(self.explain_fn(inputs)["probabilities"], tf.float32)

    def pad(self, inputs):
        """Ids padded up to the grid's lengths and the batch up to a power of two (all-padding rows)."""
        batch = tf.shape(inputs["premise"])[0]
        rows = next_power_of_two(batch) - batch
        padded = {}
        for key in INPUT_NAMES:
            length = tf.shape(inputs[key])[1]
            columns = grid_length(length, self.boundaries[key]) - length
            padded[key] = tf.pad(inputs[key], [[0, rows], [0, columns]], constant_values=PAD_ID)
        return padded

    def chunked(self, inputs):
        """The probabilities of a batch run in length-sorted chunks of `chunk_size` pairs."""
        lengths = {key: tf.reduce_sum(tf.cast(tf.not_equal(inputs[key], PAD_ID), tf.int32), axis=1)
                   for key in INPUT_NAMES}
        batch = tf.shape(inputs["premise"])[0]
        key = lengths["premise"] * (tf.shape(inputs["hypothesis"])[1] + 1) + lengths["hypothesis"]
        order = tf.argsort(key, stable=True)
        ids = {name: tf.gather(inputs[name], order) for name in INPUT_NAMES}
        lengths = {name: tf.gather(lengths[name], order) for name in INPUT_NAMES}
        chunks = (batch + self.chunk_size - 1) // self.chunk_size

        def body(i, results):
            start = i * self.chunk_size
            stop = tf.minimum(start + self.chunk_size, batch)
            chunk = {name: ids[name][start:stop, :tf.maximum(1, tf.reduce_max(lengths[name][start:stop]))]
                     for name in INPUT_NAMES}
            return i + 1, results.write(i, self.plain(chunk))

        results = tf.TensorArray(tf.float32, size=chunks, infer_shape=False,
                                 element_shape=tf.TensorShape([None, self.model.num_classes]))
        _, results = tf.while_loop(lambda i, _: i < chunks, body, (tf.constant(0), results))
        return tf.gather(results.concat(), tf.math.invert_permutation(order))

    def probabilities(self, inputs):
        """float32 `[B, classes]` of padded token ids."""
        batch = tf.shape(inputs["premise"])[0]
        rest = self.plain
        if self.chunk_size:
            rest = lambda x: tf.cond(batch > self.chunk_size, lambda: self.chunked(x),  # noqa: E731
                                     lambda: self.plain(x))
        if not self.xla_max_batch:
            return rest(inputs)
        return tf.cond(batch <= self.xla_max_batch, lambda: self.compiled(self.pad(inputs))[:batch],
                       lambda: rest(inputs))
