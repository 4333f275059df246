"""The model a run trains: built from its settings, its word vectors loaded, compiled with the paper's
optimizer and loss under the distribution strategy."""

import keras
import numpy as np

from zoo.errors import TrainError
from zoo.registry import create_model
from zoo.runs.optimizer import make_optimizer
from zoo.training.kernels import use_xla_loops
from zoo.training.losses import NLILoss


def make_loss(model, l2=0.0):
    """The training loss: `zoo.training.losses.NLILoss` over the model's non-embedding weight matrices."""
    embedding_ids = {id(w) for w in model.embedding.weights}
    weights = [w for w in model.trainable_weights if id(w) not in embedding_ids and len(w.shape) > 1]
    return NLILoss(l2=l2 or 0.0, weights=weights)


def build_model(model_name, settings, vocab_size, embeddings, strategy, jit_compile="auto"):
    """Creates, loads the vectors into, and compiles the model inside the strategy scope.

    Args:
        model_name: the registered name.
        settings: the run's `RunSettings` (the model's constructor arguments, its `TrainSettings`).
        vocab_size: rows of the embedding table.
        embeddings: the run's word vectors (`zoo.training.inputs.RunEmbeddings`).
        strategy: the `tf.distribute.Strategy`.
        jit_compile: `"auto"` (Keras decides, see docs/hardware.md), True or False.

    Raises:
        TrainError: the model cannot be built with these settings.
    """
    with strategy.scope():
        try:
            model = create_model(model_name, vocabulary_size=vocab_size, embedding_dim=embeddings.dim,
                                 tunable_words=embeddings.tunable_words, num_tunable=embeddings.num_tunable,
                                 **settings.model)
        except (TypeError, ValueError) as error:
            raise TrainError(f"cannot build {model_name!r} with {settings.model}: {error}") from None
        if embeddings.matrix is not None:
            model.set_embeddings(embeddings.matrix, embeddings.tunable_mask)
        if jit_compile is True:
            use_xla_loops(model)  # else Keras keeps XLA off on a GPU for cuDNN-capable LSTMs
        model.compile(optimizer=make_optimizer(settings.train), loss=make_loss(model, settings.train.l2),
                      weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=jit_compile)
    return model


def copy_weights(source, target):
    """Copies every weight but the word vectors (set from the merged matrix) from one model to another.

    Raises:
        TrainError: a weight of another shape (the models' sizes differ).
    """
    skip = {id(w) for w in source.embedding.weights} | {id(w) for w in target.embedding.weights}
    pairs = [(a, b) for a, b in zip([w for w in source.weights if id(w) not in skip],
                                    [w for w in target.weights if id(w) not in skip])]
    for a, b in pairs:
        if tuple(a.shape) != tuple(b.shape):
            raise TrainError(f"--init-from: weight {a.path} has shape {tuple(a.shape)}, the new model's "
                             f"{b.path} {tuple(b.shape)}")
        b.assign(a)


def parameter_counts(model):
    """`{"total", "trainable", "without_embeddings"}` (the last is the papers' |θ|_M)."""
    return {"total": int(model.count_params()),
            "trainable": int(sum(int(np.prod(w.shape)) for w in model.trainable_weights)),
            "without_embeddings": int(model.count_params_without_embeddings())}
