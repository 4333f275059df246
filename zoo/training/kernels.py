"""Which kernels a model gets from Keras 3 on a TensorFlow GPU, and the switch to an all-XLA step.

With the TensorFlow backend, Keras 3 (keras/src/layers/rnn/lstm.py, keras/src/backend/tensorflow/rnn.py,
keras/src/trainers/trainer.py) decides as follows:

- A `keras.layers.LSTM` runs on cuDNN (`CudnnRNNV3`) when a GPU is visible and the layer allows it:
  `use_cudnn` "auto" or True, tanh activation, sigmoid recurrent activation, a bias, no unrolling, no
  recurrent dropout. Its mask must be right-padded and no row may be fully masked: otherwise a
  `tf.Assert` fails at run time ("You are passing a RNN mask that does not correspond to right-padded
  sequences"). Such a layer sets `supports_jit = False`, because cuDNN ops cannot run inside XLA.
- `jit_compile="auto"` (the default of `compile`) resolves to XLA only when a non-CPU device is visible,
  no distribution strategy scope built the model, and every layer `supports_jit`: so a model with a
  cuDNN-capable LSTM trains without XLA on a GPU, and its other recurrent loops (`keras.layers.RNN` over
  the zoo's cells) run as plain `tf.while_loop`s; a model without one trains under XLA.
- On a CPU, and under JAX (always XLA; no cuDNN path), every loop is an XLA or while loop.

`gpu_plan(model)` reports this for a model without needing a GPU; `use_xla_loops(model)` turns the LSTMs'
cuDNN path off so that `jit_compile=True` compiles the whole step (train.py `--jit-compile true`); the
zoo's bi-LSTMs then leave their packed loop by themselves (the model tells them its `jit_compile`:
`zoo.layers.loop_choice`).
"""

import keras

from zoo.layers.traversal import iter_layers


def cudnn_capable(lstm):
    """Whether a `keras.layers.LSTM` meets Keras's conditions for cuDNN (given a GPU and a valid mask)."""
    cell = lstm.cell
    return (lstm.use_cudnn in ("auto", True) and not lstm.unroll and cell.use_bias
            and cell.activation is keras.activations.tanh and cell.recurrent_activation is keras.activations.sigmoid
            and not cell.recurrent_dropout)


def gpu_plan(model, distributed=False):
    """What Keras 3 does with `model` on a TensorFlow GPU.

    Args:
        model: a built model.
        distributed: whether it is built under a distribution strategy (mirrored, multi-worker).

    Returns:
        `{"cudnn_lstms": [names], "other_lstms": [names], "loops": [names of other recurrent layers],
        "xla": bool (what jit_compile="auto" resolves to), "why": str}`.
    """
    layers = iter_layers(model)
    lstms = [layer for layer in layers if isinstance(layer, keras.layers.LSTM)]
    cudnn = [layer.name for layer in lstms if cudnn_capable(layer)]
    loops = [layer.name for layer in layers
             if isinstance(layer, keras.layers.RNN) and not isinstance(layer, keras.layers.LSTM)]
    if distributed:
        xla, why = False, "Keras turns XLA off under a distribution strategy"
    elif cudnn:
        xla, why = False, "cuDNN LSTMs cannot run inside XLA, so Keras turns XLA off for the whole step"
    else:
        xla, why = True, "no cuDNN layer: the whole training step compiles with XLA"
    return {"cudnn_lstms": cudnn, "other_lstms": [layer.name for layer in lstms if not cudnn_capable(layer)],
            "loops": loops, "xla": xla, "why": why}


def use_xla_loops(model):
    """Makes every LSTM of `model` use Keras's generic loop instead of cuDNN, so that `jit_compile=True`
    compiles the whole training step with XLA (on a GPU, Keras would otherwise keep XLA off).

    Returns:
        the names of the LSTMs switched.
    """
    switched = []
    for layer in iter_layers(model):
        if isinstance(layer, keras.layers.LSTM) and layer.use_cudnn != False:  # noqa: E712 ("auto" or True)
            layer.use_cudnn = False
            layer.supports_jit = True
            switched.append(layer.name)
    return switched
