"""A Keras model's weights as the run directory saves and restores them (`zoo.runs.directory.RunDirectory`,
which reads no model itself): the model's and optimizer's weights through Keras's public `save_weights` and
`load_weights`."""

import warnings

from zoo.runs.optimizer import build_optimizer

# Keras's warning when weights are loaded into a model whose optimizer is not built; where that is the
# intent (a finished run trained further, a fine-tuning's first weights, evaluation: the optimizer starts
# again or is not needed), the zoo says so in its own line.
OPTIMIZER_SKIPPED = "Skipping variable loading for optimizer"


class ModelWeights:
    """`save(path)` and `load(path, optimizer)` of a compiled Keras model, for `RunDirectory`.

    Args:
        model: the run's model.
    """

    def __init__(self, model):
        self.model = model

    def save(self, path):
        """Writes the model's and optimizer's weights to `path` (the run directory makes the write atomic)."""
        self.model.save_weights(path)

    def load(self, path, optimizer=True):
        """Loads `path` into the model; `optimizer`: the optimizer's moments too (it is built first, so that they
        load), else the model's weights only."""
        if optimizer:
            build_optimizer(self.model)
            self.model.load_weights(path)
            return
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=OPTIMIZER_SKIPPED)
            self.model.load_weights(path)
