"""Training: the library behind `train.py`.

- `config`: `RunConfig`, the run's one typed configuration (from the command line or keyword arguments), with
  the preset typed: `config.train` (`TrainSettings`), `config.data` (`DataSettings`), `config.model_settings`.
- `trainer`: `train(config)`, the orchestration of a whole run; `outcome`: `TrainOutcome`, what it returns.
- `inputs`: corpus by role, vocabulary with pretrained words, word vectors.
- `model`: the model built from the preset, its optimizer and loss; `ensemble`: HIM from two runs.
- `callbacks`, `losses`, `strategy`, `kernels`, `compile_cache`: the pieces of the training loop.

A finished run is read back by `zoo.runs` (`zoo.load`), which does not import this package.
"""

from zoo.errors import TrainError
from zoo.training.config import RunConfig


def train(callbacks=(), **options):
    """Trains a model from Python with `train.py`'s settings as keyword arguments (see `RunConfig.create`);
    `callbacks`: extra Keras callbacks, called after the run's own (`trainer.train`).

    Example:
    ```python
    import zoo.training
    outcome = zoo.training.train(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1)
    outcome.results.test_accuracy, outcome.run_dir
    ```

    Returns:
        a `zoo.training.outcome.TrainOutcome` (see `trainer.train`).

    Raises:
        TrainError: a user error (an unknown option or setting is a `zoo.errors.ConfigError`).
    """
    # Deferred: the training loop imports TensorFlow and Keras (seconds), which `import zoo.training` (the
    # settings, `zoo.training.config`) does not need.
    from zoo.training.trainer import train as run_training

    return run_training(RunConfig.create(**options), callbacks=callbacks)


__all__ = ["TrainError", "train"]
