"""The `keras.export.ExportArchive` that both exports (SavedModel and TFLite) start from: the model's
weights, each saved once, and nothing traced before the endpoints are.

`archive.track(model)` does two things: it lists the model's variables as the archive's, and it keeps the
model as a root that `write_out` walks in search of lookup tables. On that walk TensorFlow asks every Keras
model it meets for its default serving function (`_default_save_signature`) and traces it: the whole
model once more, for nothing here, since the zoo's models hold no lookup table (the vocabulary's table is
tracked apart) and the archive serves only its own endpoints. That trace was a sixth of an export (ESIM,
tiny run, one thread: 1.0 of 6.1 s of CPU; rocktaschel_wbw 0.26 of 2.1 s). So the weights are listed
directly, and as the `tf.Variable`s the endpoints capture: `track()` lists the Keras variables, writing the
archive lists the `tf.Variable`s its functions capture, and the checkpoint then held every weight twice
(an ESIM with a 40,000-word table: 94 MB of variables instead of 47). `loaded.variables` still lists the
weights.
"""

import keras

_LISTS = ("variables", "trainable_variables", "non_trainable_variables")


def model_archive(model):
    """A new `keras.export.ExportArchive` holding `model`'s weights (see the module's docstring).

    The lists are set on the archive's TensorFlow trackable (`_tf_trackable`, where Keras's own `track()`
    puts them); a Keras without it gets `track(model)`, which saves the same weights (twice, and at the
    cost of one more trace).
    """
    archive = keras.export.ExportArchive()
    trackable = getattr(archive, "_tf_trackable", None)
    if trackable is None or not all(hasattr(trackable, name) for name in _LISTS):
        archive.track(model)
        return archive
    for name in _LISTS:
        setattr(trackable, name, [getattr(v, "value", v) for v in getattr(model, name)])
    return archive
