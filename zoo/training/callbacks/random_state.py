"""The randomness of an epoch as a function of the seed and the epoch, so that a resumed run is the
uninterrupted one: the order of the training pairs and the dropout masks."""

import keras
import numpy as np
import tensorflow as tf

# Draws per seed generator and epoch before the streams of two epochs would overlap (one draw per
# dropout call: SNLI's 17,000 steps of an epoch use far fewer).
DRAWS_PER_EPOCH = 1 << 20


class EpochRandomness(keras.callbacks.Callback):
    """Sets, when each epoch begins, the epoch the training pipeline shuffles for and the dropout state.

    Keras keeps neither in a `BackupAndRestore` backup: tf.data reshuffles on each iteration of the
    dataset (a new process starts again from the first epoch's order) and each dropout layer's
    `SeedGenerator` counts its draws from the layer's construction. Here the pipeline reads `epoch` (an
    int64 variable; `zoo.data.pipeline.shuffle_by_epoch`) and every seed generator of the model restarts
    each epoch at the counter `epoch * DRAWS_PER_EPOCH` (its seed, drawn when the model was built from
    the run's seed, is kept), so epoch N draws the same order and the same masks whether or not the run
    was interrupted before it.

    Create it outside any distribution strategy's scope and give `epoch` to the training dataset
    (`zoo.runs.datasets.make_dataset(..., epoch=randomness.epoch)`).
    """

    def __init__(self):
        super().__init__()
        self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="data_epoch")

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch.assign(epoch)
        for state in seed_generator_states(self.model):
            value = np.asarray(state.numpy())
            counter = (epoch * DRAWS_PER_EPOCH) % (np.iinfo(value.dtype).max + 1)
            state.assign(np.asarray([value[0], counter], dtype=value.dtype))


def seed_generator_states(model):
    """The state variables `[seed, counter]` of the model's `keras.random.SeedGenerator`s (dropout layers)."""
    return [v for v in model.variables if v.path.endswith("seed_generator_state")]
