"""Bidirectional LSTMs whose two directions are made here, so that a model loads from a `.keras` file every time."""

import keras


def bidirectional_lstm(units, name):
    """`keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True), name=name)`, the backward
    LSTM given explicitly: `forward_{name}` reads left to right, `backward_{name}` (`go_backwards=True`, the
    same settings otherwise) right to left, and their outputs are concatenated `[B, L, 2 * units]`.

    Given only the forward LSTM, `Bidirectional` makes the backward one by serialising the forward layer and
    deserialising it. Inside `keras.models.load_model` that copy runs in Keras' object-sharing scope, which
    recognises objects by `id()`: when the forward LSTM of an earlier `Bidirectional` has been freed and the
    next one is allocated at its address, the "copy" can be a layer made earlier, and loading a model with
    two bi-LSTMs (`esim`) failed now and then ("Forward layer and backward layer should have different
    `go_backwards` value"). With the backward layer given, each `Bidirectional` serialises its forward layer
    once, and no model of the zoo has enough bi-LSTMs for an address to be reused twice.

    Args:
        units: the size of each direction.
        name: the layer's name.
    """
    forward = keras.layers.LSTM(units, return_sequences=True, name=f"forward_{name}")
    backward = keras.layers.LSTM(units, return_sequences=True, go_backwards=True, name=f"backward_{name}")
    return keras.layers.Bidirectional(forward, backward_layer=backward, name=name)
