"""The training loss of every model: cross-entropy over the real pairs of a batch, plus an optional ℓ2 term."""

import keras
from keras import ops

from zoo.layers.serializable import serializable


@serializable
class NLILoss(keras.losses.Loss):
    """Sparse cross-entropy on logits, averaged over the pairs whose sample weight is not 0, plus
    `l2 * Σ ‖W‖²` over `weights`.

    Shape-stable batches (`zoo.data.batching`) fill a short batch up with rows of weight 0: the
    `"mean_with_sample_weight"` reduction divides by the sum of the weights, so such rows change neither
    the loss nor its gradient, and a batch of n pairs gives the mean over its n pairs exactly as an
    unpadded batch would. (Under a distribution strategy each replica averages its own share of the
    batch, and the replicas' gradients are averaged.)

    Registered with Keras (`nli_zoo>NLILoss`), so a model compiled by train.py saves to and loads from a
    `.keras` file. The penalised variables do not serialize: a loaded model's loss has its `l2` but no
    weights, so to train on with the penalty, compile again with `zoo.training.model.make_loss(model, l2)`.

    Args:
        l2: the coefficient of the ℓ2 penalty (Rocktäschel et al. §3 search ℓ2 in {0, 1e-4, 3e-4, 1e-3}).
        weights: the variables it penalises (the model's non-embedding weight matrices).
        name: the loss's name.
    """

    def __init__(self, l2=0.0, weights=(), name="nli_loss"):
        super().__init__(name=name, reduction="mean_with_sample_weight")
        self.l2 = float(l2)
        self.penalized = list(weights)

    def call(self, y_true, y_pred):
        loss = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)  # [B]
        if self.l2 and self.penalized:
            penalty = sum(ops.sum(ops.square(ops.cast(w, "float32"))) for w in self.penalized)
            loss = loss + ops.cast(self.l2 * penalty, loss.dtype)
        return loss

    def get_config(self):
        return {"name": self.name, "l2": self.l2}
