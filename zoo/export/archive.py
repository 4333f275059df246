"""The SavedModel both exports (TF Serving and TFLite) write: the model's weights, each saved once, the
vocabulary's table, and the export's endpoints, each also a signature; the model traced once.

Why not `keras.export.ExportArchive` (which the exports used before): its `write_out` lists the variables
the endpoints use by tracing them (`get_concrete_function()`), and an endpoint given as a `tf.function`
is traced when it is added; `tf.saved_model.save` then traces every endpoint again, because a trace made
inside a save is cached apart from one made outside it (the save's variable policy is part of
`tf.function`'s cache key). So each export traced the model twice and its `saved_model.pb` held both
graphs. Here nothing is traced before `tf.saved_model.save` (public TensorFlow), which traces each endpoint
once, and an inner `tf.function` the endpoints share (the model's `explain`) is traced once for all of
them. Idle, one thread, tiny runs (CPU s of `export_saved_model`, `saved_model.pb` bytes): ESIM 3.6 -> 2.2,
rocktaschel_wbw 1.8 -> 0.9, HIM 8.5 -> 5.0; HIM's graph 3.7 -> 1.9 MB. The SavedModel is the same kind
as before: `serving_default` and the other endpoints as signatures for TF Serving and `saved_model_cli`,
callable as attributes after `tf.saved_model.load`, the table rebuilt from `assets/vocab.txt` on load.

The weights are listed as the `tf.Variable`s the endpoints capture (`Variable.value` under Keras's
TensorFlow backend), so each is saved once; the Keras model itself is not tracked (saving a tracked Keras
model traces its default serving function: the whole model once more, for nothing here).
"""

import tensorflow as tf


class ServingArchive(tf.Module):
    """Endpoints and the weights and tables they read, written by `write_out` as one SavedModel.

    Args:
        model: the Keras model whose weights the endpoints read.
    """

    def __init__(self, model):
        super().__init__(name="nli_zoo_export")
        self.weights = [getattr(v, "value", v) for v in model.variables]
        self.tables = []
        self.signature_names = []

    def track(self, table):
        """Saves a lookup table (with its asset) that an endpoint reads."""
        self.tables.append(table)

    def add_endpoint(self, name, fn, input_signature=None):
        """Adds `fn` as the signature and attribute `name`; a plain function needs `input_signature`, a
        `tf.function` must have one. Nothing is traced until `write_out`."""
        if input_signature is not None:
            fn = tf.function(fn, input_signature=input_signature, autograph=False)
        elif getattr(fn, "input_signature", None) is None:
            raise ValueError(f"endpoint {name!r}: give an input_signature or a tf.function that has one")
        setattr(self, name, fn)
        self.signature_names.append(name)
        return fn

    def write_out(self, path):
        """Writes the SavedModel to `path`; the first endpoint is also `serving_default` (TF Serving's)."""
        signatures = {name: getattr(self, name) for name in self.signature_names}
        signatures.setdefault("serving_default", signatures[self.signature_names[0]])
        tf.saved_model.save(self, path, signatures=signatures)
