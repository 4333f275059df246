"""What `zoo.training.train` returns: one type for a run trained now, one found finished, and a HIM ensemble."""

import dataclasses
from typing import Any

from zoo.runs.record import RunRecord
from zoo.runs.results import RunResults


@dataclasses.dataclass(frozen=True)
class TrainOutcome:
    """A run that `train()` trained, resumed, combined or found finished.

    Attributes:
        run_dir: the run directory written (a non-chief worker's is its scratch folder, `RUN/workers/...`).
        results: its `results.json` (`zoo.runs.results.RunResults`).
        record: its `config.json` (`zoo.runs.record.RunRecord`).
        model: the Keras model with the best weights (a HIM ensemble's combined model); None for a run found
            finished (load it with `zoo.load(run_dir)`).
        vocab, tokenizer, embeddings: the run's `Vocabulary`, `Tokenizer` and `EmbeddingMatrix`, for a run
            trained in this call; None otherwise.
        trained: False for a run found finished (nothing was trained or scored in this call).
    """

    run_dir: str
    results: RunResults
    record: RunRecord
    model: Any = None
    vocab: Any = None
    tokenizer: Any = None
    embeddings: Any = None
    trained: bool = True
