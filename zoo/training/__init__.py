"""Training and evaluation: the library behind `train.py` and `evaluate.py`.

- `trainer`: `train(args)`, the whole training run (`zoo.training.train(**options)` from Python).
- `inputs`: corpus, tokens, vocabulary, word vectors and tf.data for a run.
- `evaluation`: accuracy, per-class accuracy, confusion matrix, per genre.
- `runs`: the run directory and `load_run` (`zoo.load(run_dir)`).
- `callbacks`, `losses`, `strategy`, `cli`: the pieces of the training loop.
"""

from zoo.training.runs import Run, load_run


def train(**options):
    """Trains a model from Python with `train.py`'s options as keyword arguments.

    Example:
    ```python
    import zoo.training
    result = zoo.training.train(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1)
    ```

    Returns:
        `{"run_dir", "results", "model", "vocab", "tokenizer", "config"}` (see `trainer.train`).
    """
    from zoo.training.trainer import train as run_training, training_options

    return run_training(training_options(**options))


__all__ = ["Run", "load_run", "train"]
