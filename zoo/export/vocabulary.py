"""A smaller vocabulary for exports that must fit a device (`export.py --max-vocabulary N`).

A run's vocabulary holds its training words first (ids 3 to `record.vocabulary["training_words"] - 1`,
most frequent first) and then the words that only the pretrained vectors brought (frozen rows, for dev
and test words unseen in training). Keeping the first N ids therefore drops the rarest words, the
pretrained-only ones before any training word; a dropped word maps to [UNK] like any unknown word.
The model is rebuilt with an N-row embedding table holding the vectors the run's model gives those ids
(one table: which rows were trainable no longer matters), and every other weight copied.

Example:
```python
small, report = cut_vocabulary(zoo.load("runs/rocktaschel_wbw"), 20000)
report  # {"kept": 20000, "cut": 31234, "training_words": 14016, "training_words_cut": 0}
```
"""

import dataclasses

import numpy as np

from zoo.data.vocab import Vocabulary
from zoo.export.exporting import ExportError
from zoo.runs.run import Run, build_model


def cut_vocabulary(run, max_vocabulary):
    """The run with its vocabulary cut to the first `max_vocabulary` ids.

    Args:
        run: a `zoo.runs.Run`.
        max_vocabulary: ids to keep (the 3 reserved ones included).

    Returns:
        `(run, report)`: a `Run` sharing the run directory and record (with the new vocabulary size) whose
        model has `max_vocabulary` rows (the run itself when it has no more ids), and
        `{"kept", "cut", "training_words", "training_words_cut"}`.

    Raises:
        ExportError: `max_vocabulary` below 4, or a model whose weights cannot be carried over.
    """
    if max_vocabulary is None or int(max_vocabulary) >= len(run.vocab):
        return run, {"kept": len(run.vocab), "cut": 0, **_training_words(run, len(run.vocab))}
    size = int(max_vocabulary)
    if size < 4:
        raise ExportError(f"--max-vocabulary must keep at least one word besides the 3 reserved ids, got {size}")
    source = run.model
    if not getattr(source, "embeds_words", True):  # HIM: each member has its own table
        raise ExportError(f"--max-vocabulary: {run.record.model} has no single word embedding to cut")
    record = dataclasses.replace(run.record, vocabulary_size=size, tunable_words="none", num_tunable=0)
    model = build_model(record)
    skip = {id(w) for w in source.embedding.weights} | {id(w) for w in model.embedding.weights}
    old = [w for w in source.weights if id(w) not in skip]
    new = [w for w in model.weights if id(w) not in skip]
    if len(old) != len(new) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(old, new)):
        raise ExportError(f"--max-vocabulary: the weights of {run.record.model} do not carry over to a "
                          "model with a smaller vocabulary")
    for a, b in zip(old, new):
        b.assign(a)
    vectors = np.asarray(source.embedding(np.arange(size, dtype="int32")), dtype="float32")
    model.embedding.set_vectors(vectors)
    vocab = Vocabulary(run.vocab.words[:size])
    report = {"kept": size, "cut": len(run.vocab) - size, **_training_words(run, size)}
    return Run(run.run_dir, model, vocab, run.tokenizer, record), report


def _training_words(run, kept):
    training = (run.record.vocabulary or {}).get("training_words")
    if training is None:
        return {"training_words": None, "training_words_cut": None}
    return {"training_words": int(training), "training_words_cut": max(0, int(training) - kept)}


def changed_tokens(tokenizer, vocab, small_vocab, examples, max_lengths=None):
    """How many tokens of `examples` (premises and hypotheses, truncated as the model sees them) have a
    word in `vocab` but not in `small_vocab`, i.e. become [UNK] through the cut.

    Returns:
        `{"tokens": total tokens, "changed": tokens now [UNK]}`.
    """
    max_lengths = max_lengths or {}
    total = changed = 0
    for key in ("premise", "hypothesis"):
        limit = max_lengths.get(key)
        for tokens in tokenizer.tokenize_batch([e[key] for e in examples]):
            tokens = tokens[:limit] if limit else tokens
            total += len(tokens)
            changed += sum(1 for t in tokens if t in vocab and t not in small_vocab)
    return {"tokens": total, "changed": changed}
