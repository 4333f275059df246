"""tf.data input pipeline: in-graph tokenization and lookup, truncation, length bucketing, padding.

Example:
```python
ds = make_dataset(splits["train"], vocab, Tokenizer(), batch_size=32, shuffle=True, seed=1)
features, labels = next(iter(ds))   # {"premise": int32 [B, Lp], "hypothesis": int32 [B, Lh]}, int32 [B]
```
"""

import numpy as np
import tensorflow as tf

from zoo.data.vocab import PAD_ID

BUCKET_BOUNDARIES = (8, 12, 16, 20, 24, 32, 48, 64, 96)
_TOKENIZE_BATCH = 1024


def _encode(texts, vocab, tokenizer, max_length):
    """tf.string [B] -> ragged int32 ids [B, None], truncated to `max_length`."""
    ids = vocab.tf_lookup(tokenizer.tf_tokenize(texts))
    return ids if max_length is None else ids[:, :max_length]


def _at_least_one_column(x):
    """Pads a [B, L] batch to L >= 1 so that a batch of empty sentences still has a (PAD) column."""
    return tf.pad(x, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(x)[1])]], constant_values=PAD_ID)


def make_dataset(examples, vocab, tokenizer, batch_size, shuffle=False, seed=0, max_premise_length=None,
                 max_hypothesis_length=None, bucket=True, cache=True, drop_remainder=False):
    """Builds a batched tf.data pipeline from examples (tokenization and lookup run in graph).

    Args:
        examples: list of dicts with `"premise"`, `"hypothesis"` (str) and `"label"` (int).
        vocab: `Vocabulary`.
        tokenizer: `Tokenizer`.
        batch_size: examples per batch.
        shuffle: shuffle all examples, differently each epoch (seeded by `seed`).
        seed: shuffle seed.
        max_premise_length, max_hypothesis_length: truncate longer sentences (None: keep all tokens).
        bucket: batch sentences of similar length together (bucketed on the longer of the two
            sentences); else plain padded batches in order.
        cache: cache the encoded examples in memory (before shuffling).
        drop_remainder: drop a last, smaller batch (of each bucket when bucketing).

    Returns:
        tf.data.Dataset of `({"premise": int32 [B, Lp], "hypothesis": int32 [B, Lh]}, int32 [B])`, right-padded
        with PAD_ID (at least one column, so an empty sentence is an all-PAD row).
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

    ds = ds.batch(_TOKENIZE_BATCH).map(encode, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
    # Unbatched ragged rows have a RaggedTensorSpec of rank 1; an identity map turns them into plain tensors.
    ds = ds.map(lambda x, y: ({k: tf.identity(v) for k, v in x.items()}, y))
    if cache:
        ds = ds.cache()
    if shuffle:
        ds = ds.shuffle(max(len(examples), 1), seed=seed, reshuffle_each_iteration=True)
    ds = pad_and_batch(ds, batch_size, ({"premise": [None], "hypothesis": [None]}, []),
                       ({"premise": PAD_ID, "hypothesis": PAD_ID}, 0), bucket, drop_remainder)
    ds = ds.map(lambda x, y: ({k: _at_least_one_column(v) for k, v in x.items()}, y))
    return ds.prefetch(tf.data.AUTOTUNE)


def pad_and_batch(ds, batch_size, padded_shapes, padding_values, bucket=True, drop_remainder=False):
    """Batches `(features, label)` rows with padding, by length buckets of the longer sentence or in order.

    Args:
        ds: unbatched dataset whose features hold at least `"premise"` and `"hypothesis"` ids.
        batch_size: pairs per batch.
        padded_shapes, padding_values: as for `tf.data.Dataset.padded_batch`.
        bucket: group pairs of similar length (`BUCKET_BOUNDARIES`) so that batches carry little padding.
        drop_remainder: drop incomplete batches.
    """
    if not bucket:
        return ds.padded_batch(batch_size, padded_shapes=padded_shapes, padding_values=padding_values,
                               drop_remainder=drop_remainder)
    boundaries = list(BUCKET_BOUNDARIES)
    return ds.bucket_by_sequence_length(
        lambda x, y: tf.maximum(tf.shape(x["premise"])[0], tf.shape(x["hypothesis"])[0]),
        bucket_boundaries=boundaries, bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        padded_shapes=padded_shapes, padding_values=padding_values, drop_remainder=drop_remainder)


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
