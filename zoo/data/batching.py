"""Shape-stable batching: a small, fixed set of batch shapes whatever the size of the data.

XLA compiles a training step once per distinct input shape (seconds for a paper-size model), so
padding each batch to its own longest sentence, which gives dozens of shapes on SNLI and more the larger
the data, makes the first epoch nearly all compilation. Here both sentences are padded up to length
boundaries instead: a pair falls in the cell (i, j) of a grid, where i is the first premise boundary
that holds its premise and j the first hypothesis boundary that holds its hypothesis, and every batch
of that cell has the shape `[batch_size, P_i]`, `[batch_size, H_j]`. The batch dimension is fixed too:
a short last batch is filled up with rows that carry weight 0 (`zoo.data.pipeline`: empty sentences;
they count in no
loss, metric or result). An epoch therefore sees at most `len(P) * len(H)` shapes (12 with the
defaults) however many pairs there are.

The default boundaries were chosen for the share of real tokens among the padded positions of the 9,842
SNLI dev pairs: 69% at batch size 32, filler rows included, with at most 12 shapes
(`python scripts/benchmark_training.py --data DEV_TOKENS --shapes-only`); the last boundary of each
sentence is the preset's maximum length, at which sentences are truncated.

This module needs no TensorFlow: the tf.data pipeline (`zoo.data.pipeline`) and the numpy batches of
the benchmark (`plan_batches`) use the same grid.

Example:
```python
grid = LengthGrid.for_max_lengths(100, 100)   # premise 14, 22, 36, 100 x hypothesis 10, 20, 100
grid.shapes                                    # [(14, 10), (14, 20), (14, 100), (22, 10), ...]
grid.padded_lengths([9, 30], [4, 12])          # (array([14, 36]), array([10, 20]))
```
"""

import numpy as np

PREMISE_BOUNDARIES = (14, 22, 36)
HYPOTHESIS_BOUNDARIES = (10, 20)


class LengthGrid:
    """Length boundaries of premises and hypotheses; each batch is padded up to one boundary of each.

    Args:
        premise_boundaries: increasing positive lengths; the last may be None (no maximum: the longest
            premises are then padded to their batch's longest, and shapes are bounded only when the
            data's lengths are).
        hypothesis_boundaries: the same for hypotheses.

    Raises:
        ValueError: for empty, non-increasing or non-positive boundaries.
    """

    def __init__(self, premise_boundaries, hypothesis_boundaries):
        self.premise_boundaries = _check_boundaries(premise_boundaries, "premise")
        self.hypothesis_boundaries = _check_boundaries(hypothesis_boundaries, "hypothesis")

    @classmethod
    def for_max_lengths(cls, max_premise_length, max_hypothesis_length, premise_boundaries=PREMISE_BOUNDARIES,
                        hypothesis_boundaries=HYPOTHESIS_BOUNDARIES):
        """The grid of a preset: the boundaries below each maximum length, then the maximum (None: none)."""
        def bounded(boundaries, maximum):
            if maximum is None:
                return tuple(boundaries) + (None,)
            return tuple(b for b in boundaries if b < maximum) + (int(maximum),)

        return cls(bounded(premise_boundaries, max_premise_length),
                   bounded(hypothesis_boundaries, max_hypothesis_length))

    @property
    def shapes(self):
        """Every `(premise length, hypothesis length)` a batch can have (None: the batch's longest)."""
        return [(p, h) for p in self.premise_boundaries for h in self.hypothesis_boundaries]

    @property
    def num_cells(self):
        return len(self.premise_boundaries) * len(self.hypothesis_boundaries)

    def cells(self, premise_lengths, hypothesis_lengths):
        """The cell index `i * len(H) + j` of each pair (lengths after truncation)."""
        i = _index(self.premise_boundaries, premise_lengths)
        j = _index(self.hypothesis_boundaries, hypothesis_lengths)
        return i * len(self.hypothesis_boundaries) + j

    def padded_lengths(self, premise_lengths, hypothesis_lengths):
        """The lengths pairs are padded to: `(premise [N], hypothesis [N])` (a length beyond an open last
        boundary stays as it is; the batch then pads to its longest)."""
        return (_pad_to(self.premise_boundaries, premise_lengths),
                _pad_to(self.hypothesis_boundaries, hypothesis_lengths))

    def get_config(self):
        return {"premise_boundaries": list(self.premise_boundaries),
                "hypothesis_boundaries": list(self.hypothesis_boundaries)}

    def __repr__(self):
        return f"LengthGrid(premise={self.premise_boundaries}, hypothesis={self.hypothesis_boundaries})"


def _check_boundaries(boundaries, name):
    boundaries = tuple(None if b is None else int(b) for b in boundaries)
    closed = [b for b in boundaries if b is not None]
    if (not boundaries or any(b is None for b in boundaries[:-1]) or any(b < 1 for b in closed)
            or any(a >= b for a, b in zip(closed, closed[1:]))):
        raise ValueError(f"{name} boundaries must be increasing positive lengths (the last may be None), "
                         f"got {boundaries}")
    return boundaries


def _closed(boundaries):
    return np.asarray([b for b in boundaries if b is not None], dtype=np.int64)


def _index(boundaries, lengths):
    """Index of the first boundary >= each length (the last index for lengths beyond every boundary)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.minimum(np.searchsorted(_closed(boundaries), lengths, side="left"), len(boundaries) - 1)


def _pad_to(boundaries, lengths):
    lengths = np.asarray(lengths, dtype=np.int64)
    closed = _closed(boundaries)
    index = np.searchsorted(closed, lengths, side="left")
    padded = closed[np.minimum(index, len(closed) - 1)] if len(closed) else lengths.copy()
    return np.where(index < len(closed), padded, lengths)


def plan_batches(premise_lengths, hypothesis_lengths, grid, batch_size, shuffle=False, seed=0, bucket=True,
                 drop_remainder=False):
    """The batches of one epoch as index arrays, the numpy twin of `zoo.data.pipeline`'s batching.

    With `bucket`, pairs are grouped by grid cell (in shuffled order when `shuffle`), so every batch of a
    cell has the cell's shape; else batches are consecutive pairs, padded up to the cell of their longest
    premise and hypothesis. A short last batch (of each cell, when bucketing) is kept, to be filled up
    with weight-0 rows by the caller (`fill_batch`), unless `drop_remainder`.

    Args:
        premise_lengths, hypothesis_lengths: int `[N]`, after truncation.
        grid: a `LengthGrid`.
        batch_size: pairs per batch.
        shuffle: shuffle the pairs first (numpy generator seeded by `seed`).
        seed: the shuffle seed.
        bucket: group pairs by cell.
        drop_remainder: drop short batches.

    Returns:
        a list of `(indices int [n <= batch_size], (premise length, hypothesis length))`.
    """
    premise_lengths = np.asarray(premise_lengths, dtype=np.int64)
    hypothesis_lengths = np.asarray(hypothesis_lengths, dtype=np.int64)
    order = np.arange(len(premise_lengths))
    if shuffle:
        order = np.random.default_rng(seed).permutation(order)
    groups = [order]
    if bucket:
        cells = grid.cells(premise_lengths[order], hypothesis_lengths[order])
        groups = [order[cells == c] for c in range(grid.num_cells)]
    batches = []
    for group in groups:
        for start in range(0, len(group), batch_size):
            indices = group[start:start + batch_size]
            if drop_remainder and len(indices) < batch_size:
                continue
            p, h = grid.padded_lengths(premise_lengths[indices].max(initial=1),
                                       hypothesis_lengths[indices].max(initial=1))
            batches.append((indices, (int(p), int(h))))
    return batches


def count_batches(premise_lengths, hypothesis_lengths, grid, batch_size, bucket=True, drop_remainder=False):
    """How many batches one epoch of `plan_batches` (and of `zoo.data.pipeline`) has: the same for every
    shuffle order, so Keras can be told the length of an epoch before it starts (progress bars with a total
    and an ETA from the first epoch on).

    Args:
        premise_lengths, hypothesis_lengths: int `[N]`, after truncation.
        grid, batch_size, bucket, drop_remainder: as for `plan_batches`.

    Returns:
        the number of batches (an int).
    """
    premise_lengths = np.asarray(premise_lengths, dtype=np.int64)
    if bucket:
        sizes = np.bincount(grid.cells(premise_lengths, np.asarray(hypothesis_lengths, dtype=np.int64)),
                            minlength=grid.num_cells)
    else:
        sizes = np.asarray([len(premise_lengths)])
    per_group = sizes // batch_size if drop_remainder else -(-sizes // batch_size)
    return int(per_group.sum())


EMPTY_ROW = -1  # `fill_batch`'s index of a filler row: an empty pair, every feature its padding value


def fill_batch(indices, batch_size):
    """Fills a short batch up to `batch_size` rows with empty rows (`EMPTY_ROW`), weighted 0: the numpy twin
    of `zoo.data.pipeline`'s filler rows, which hold every feature's padding value.

    Returns:
        `(indices int [batch_size], weights float32 [batch_size])`.
    """
    indices = np.asarray(indices, dtype=np.int64)
    missing = batch_size - len(indices)
    weights = np.ones(batch_size, dtype=np.float32)
    if missing > 0:
        weights[len(indices):] = 0.0
        indices = np.concatenate([indices, np.full(missing, EMPTY_ROW, dtype=np.int64)])
    return indices, weights
