"""The optimizer of a run's `TrainSettings`: built here only, for training (`zoo.training.model`) and for
fine-tuning a preset folder's classifier (`zoo.presets.classifier.NLIClassifier.compile`), so both read the
same settings with the same defaults (`zoo.settings.TrainSettings`)."""

import keras

from zoo.errors import ConfigError
from zoo.settings import TrainSettings


def make_optimizer(train):
    """The optimizer of `train` (a `TrainSettings`): Adam with its betas, epsilon and `global_clipnorm`, or
    another optimizer Keras knows by name with the learning rate and clipping.

    Raises:
        ConfigError: an optimizer Keras does not know.
    """
    clip = {"global_clipnorm": train.global_clipnorm} if train.global_clipnorm else {}
    if train.optimizer == "adam":
        return keras.optimizers.Adam(learning_rate=float(train.learning_rate), beta_1=train.beta_1,
                                     beta_2=train.beta_2, epsilon=train.epsilon, **clip)
    try:
        return keras.optimizers.get({"class_name": train.optimizer,
                                     "config": {"learning_rate": float(train.learning_rate), **clip}})
    except ValueError as error:
        raise ConfigError(f"unknown optimizer {train.optimizer!r}: {error}") from None


def build_optimizer(model):
    """Creates a compiled model's optimizer variables (its step count and zero moments) for the model's
    trainable weights, unless they exist: what Keras does inside the first training step, done before it
    so that `tf.function` traces the step once instead of twice (a variable created while tracing makes it
    trace again). Also before loading weights saved with the optimizer's state, which an unbuilt optimizer
    would skip. Training is unchanged: the same zero state."""
    if model.optimizer is not None and not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)


__all__ = ["TrainSettings", "build_optimizer", "make_optimizer"]
