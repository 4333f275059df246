"""A run's record as training writes it (`new_record`), and an untrained run written the same way
(`write_untrained_run`): a run directory whose model has its initial weights, for benchmarks of export and
serving at a paper's size and for tests, built by the code that builds trained runs (never a hand-written
`config.json`).

```python
from zoo.training import RunConfig
from zoo.training.untrained import write_untrained_run
config = RunConfig.create(model="esim", dataset="snli_sample", embeddings="none", run_dir="runs/esim-untrained")
run_dir = write_untrained_run(config, vocab)           # zoo.load(run_dir) works; no results.json
```
"""

import os

import keras

from zoo.constants import LABELS
from zoo.data.embeddings import EmbeddingMatrix
from zoo.data.tokenizer import Tokenizer
from zoo.runs import layout
from zoo.runs.manifest import seal
from zoo.runs.record import InitFrom, RunRecord, save_record
from zoo.runs.run import build_model


def new_record(config, vocab, embeddings, vocabulary_report=None, init_run=None, init_from=None):
    """The `RunRecord` of a run `config` describes, with what training derived. The run keeps a manifest of
    its files (`zoo.runs.manifest`).

    Args:
        config: the run's `zoo.training.config.RunConfig`.
        vocab: its `Vocabulary`.
        embeddings: its `zoo.data.embeddings.EmbeddingMatrix`.
        vocabulary_report: the vocabulary's counts (`zoo.training.inputs.vocabulary_and_vectors`).
        init_run: the loaded `--init-from` run, or None (its best weights' SHA-256 in `weights_sha256`).
        init_from: the `InitFrom` a resumed run recorded when it started (kept as it was), or None.
    """
    if init_from is None and init_run is not None:
        init_from = InitFrom(run_dir=os.path.abspath(init_run.run_dir), model=init_run.record.model,
                             data=init_run.record.data, test_accuracy=getattr(init_run.results, "test_accuracy", None),
                             weights_sha256=getattr(init_run, "weights_sha256", None))
    return RunRecord.from_json(dict(
        config.to_json(), vocabulary_size=len(vocab), embedding_dim=embeddings.dim,
        tunable_words=embeddings.tunable_words, num_tunable=embeddings.num_tunable,
        tokenizer=Tokenizer(lowercase=config.data.lowercase).get_config(), labels=list(LABELS),
        vocabulary=vocabulary_report, init_from=None if init_from is None else init_from.to_json(), manifest=True),
        os.path.join(config.run_dir, layout.CONFIG_FILE))


def write_untrained_run(config, vocab):
    """Writes the run directory `config.run_dir` with `vocab`, the run's record and its model's initial
    weights (seeded by `config.seed`): what training writes before its first epoch, plus the best weights,
    and the manifest of those files.

    Args:
        config: a `RunConfig` (its `embeddings` must be `"none"`: the vectors are the model's random ones, of
            `config.embedding_dim` or 300).
        vocab: the `Vocabulary`.

    Returns:
        the run directory.
    """
    if config.embeddings != "none":
        raise ValueError(f"an untrained run has random word vectors: use embeddings='none', not {config.embeddings!r}")
    record = new_record(config, vocab, EmbeddingMatrix.random(config.random_vectors_dim))
    run_dir = config.run_dir
    os.makedirs(run_dir, exist_ok=True)
    save_record(run_dir, record)
    vocab.save(os.path.join(run_dir, layout.VOCAB_FILE))
    keras.utils.set_random_seed(config.seed)
    layout.save_weights(build_model(record), os.path.join(run_dir, layout.BEST_WEIGHTS_FILE))
    seal(run_dir)
    return run_dir
