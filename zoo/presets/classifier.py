"""`NLIClassifier`: the task, a zoo model with its preprocessor attached, taking raw sentence pairs.

```python
classifier = zoo.from_preset("presets/bowman_lstm")
classifier.predict([("A man plays a guitar.", "A person makes music.")])   # float32 [1, 3] probabilities
classifier.fit(pairs, ["entailment", "neutral", ...], epochs=2)            # fine-tunes on raw pairs
classifier.preprocessor(pairs)   # {"premise": int32 [N, Lp], "hypothesis": int32 [N, Lh]}
classifier.labels                # ("entailment", "neutral", "contradiction")
classifier.save_to_preset("presets/bowman_lstm_tuned")
```

The classifier is a `keras.Model` (registered as `nli_zoo>NLIClassifier`) whose `call` runs its
`backbone`, the zoo's `NLIModel` (encoder and classifier head, as in its paper), on id inputs and returns
logits; `predict` returns probabilities. Its `preprocessor` is an `NLIPreprocessor` layer
(`zoo.presets.preprocessor`) holding an `NLITokenizer` layer (`zoo.presets.tokenizer`): the run's
tokenizer, vocabulary and truncation, run eagerly on Python strings exactly as `zoo.load(run_dir).encode`
does, so the classifier's probabilities are the run's. Both are saved with the classifier, as KerasHub
saves a task's: in its config, the vocabulary as the tokenizer's asset.

`fit`, `predict` and `evaluate` take raw pairs `[(premise, hypothesis), ...]` (tree models also
`(premise, hypothesis, premise_binary_parse, hypothesis_binary_parse)`), or a dict of string columns
`{"premise": [...], "hypothesis": [...]}`; anything else (id dicts, a `tf.data.Dataset` of id batches)
goes to Keras unchanged. Raw pairs are cut into batches, each padded to its longest sentence.
"""

import keras
import numpy as np
import tensorflow as tf

from zoo.constants import LABELS
from zoo.data.pipeline import with_input_options
from zoo.layers.serializable import serializable
from zoo.presets.preprocessor import is_raw
from zoo.presets.saving import write_preset
from zoo.runs.evaluation import trace_predict_once
from zoo.runs.optimizer import build_optimizer, make_optimizer
from zoo.runs.run import softmax
from zoo.settings import TrainSettings


@serializable
class NLIClassifier(keras.Model):
    """A zoo model (`backbone`, an `NLIModel`) with its `NLIPreprocessor`: raw pairs in `fit`, `predict`
    and `evaluate`.

    Args:
        backbone: the `NLIModel`.
        preprocessor: the `NLIPreprocessor` (None: the classifier takes id inputs only).
        optimizer_settings: what `compile()` with `optimizer="auto"` uses: the run's train settings that
            build its optimizer (`learning_rate`, `beta_1`, `beta_2`, `epsilon`, `global_clipnorm`; a dict, as
            saved; those missing take `zoo.settings.TrainSettings`' defaults).
        preset_metadata: the metadata of the preset it was loaded from (its provenance; `save_to_preset`
            carries it on).
        fine_tuned: whether `fit` ran since the provenance's results were measured (set by `fit`).
        compile: compile with the defaults (`compile()`), as KerasHub's tasks do.
    """

    def __init__(self, backbone, preprocessor=None, optimizer_settings=None, preset_metadata=None, fine_tuned=False,
                 compile=True, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.optimizer_settings = dict(optimizer_settings or {})
        self.train_settings = TrainSettings.of(self.optimizer_settings)  # checked now, one line if wrong
        self.preset_metadata = dict(preset_metadata or {})
        self.fine_tuned = bool(fine_tuned)
        if not backbone.built:
            backbone.build()
        self.built = True
        if compile:
            self.compile()

    # Keras ------------------------------------------------------------------------------------------
    def build(self, input_shape=None):
        if not self.backbone.built:
            self.backbone.build()
        self.built = True

    def call(self, inputs, training=False):
        """Logits `[B, 3]` of id inputs (`{"premise": ids, "hypothesis": ids, ...}`)."""
        # the backbone's bi-LSTMs are told whether this task's steps compile with XLA (zoo.layers.loop_choice)
        return self.backbone(inputs, training=training, xla=bool(self.jit_compile))

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Keras' `compile`, with defaults for fine-tuning: `"auto"` gives the run's optimizer (built as
        training builds it, `zoo.runs.optimizer.make_optimizer`), cross-entropy on the logits and accuracy."""
        if optimizer == "auto":
            optimizer = make_optimizer(self.train_settings)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        """Compiles as saved in a `.keras` file (Keras calls it when loading one)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            build_optimizer(self)

    @property
    def labels(self):
        """Label names by id."""
        return self.preprocessor.labels if self.preprocessor is not None else LABELS

    # Raw pairs --------------------------------------------------------------------------------------
    def _require_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError("this classifier has no preprocessor: give it id inputs, or attach one")
        return self.preprocessor

    def _dataset(self, pairs, labels, batch_size, shuffle=False, seed=None):
        """A `tf.data.Dataset` of preprocessed batches (each padded to its longest sentence); shuffled
        anew on each pass with `shuffle`."""
        preprocessor = self._require_preprocessor()
        specs = {name: tf.TensorSpec([None, None, 3] if name.endswith("_tree") else [None, None], tf.int32)
                 for name in preprocessor.input_names}
        rng = np.random.default_rng(seed)

        def batches():
            order = rng.permutation(len(pairs)) if shuffle else np.arange(len(pairs))
            for start in range(0, len(pairs), batch_size):
                index = order[start:start + batch_size]
                x = preprocessor([pairs[i] for i in index], pair_ids=[int(i) for i in index])
                x = {name: x[name] for name in preprocessor.input_names}
                yield x if labels is None else (x, labels[index])

        signature = specs if labels is None else (specs, tf.TensorSpec([None], tf.int32))
        count = -(-len(pairs) // batch_size)  # a known length: Keras then shows progress and expects no more
        dataset = tf.data.Dataset.from_generator(batches, output_signature=signature).apply(
            tf.data.experimental.assert_cardinality(count))
        return with_input_options(dataset)  # no autotuner: it would hold each epoch's end (see there)

    def _raw_data(self, x, y, batch_size, shuffle=False, seed=None):
        preprocessor = self._require_preprocessor()
        pairs = preprocessor.as_pairs(x)
        labels = None if y is None else preprocessor.encode_labels(y)
        if labels is not None and len(labels) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(labels)} labels")
        return pairs, self._dataset(pairs, labels, batch_size, shuffle=shuffle, seed=seed)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_data=None, shuffle=True, seed=None, **kwargs):
        """Keras' `fit`; on raw pairs `x` with labels `y` (ids or names), batches of `batch_size` (default
        32) reshuffled every epoch (`shuffle`, `seed`); `validation_data` may be `(pairs, labels)`."""
        if is_raw(x):
            if y is None:
                raise ValueError("fit on raw pairs needs their labels y (ids or names)")
            _, data = self._raw_data(x, y, batch_size or 32, shuffle=shuffle, seed=seed)
            x, y, batch_size, shuffle = data, None, None, False  # the dataset shuffles itself
        if isinstance(validation_data, (tuple, list)) and len(validation_data) == 2 and is_raw(validation_data[0]):
            _, validation_data = self._raw_data(*validation_data, 256)
        self.fine_tuned = True
        build_optimizer(self)  # else Keras traces the first step twice
        return super().fit(x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
                           validation_data=validation_data, shuffle=shuffle, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", **kwargs):
        """Keras' `evaluate`; on raw pairs `x` with labels `y` (ids or names)."""
        if is_raw(x):
            _, data = self._raw_data(x, y, batch_size or 256)
            x, y, batch_size = data, None, None
        return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)

    def predict(self, x, batch_size=None, verbose=0, steps=None, callbacks=None):
        """Class probabilities float32 `[N, 3]` (columns: `labels`).

        On raw pairs the probabilities equal `zoo.load(run_dir).predict_probabilities(pairs)` (batches of
        `batch_size`, default 256, like the run's); ids go to Keras' `predict` as they are. Keras' progress
        bar is off unless `verbose` asks for it.
        """
        if is_raw(x):
            pairs, data = self._raw_data(x, None, batch_size or 256)
            if not pairs:
                return np.zeros((0, len(self.labels)), "float32")
            trace_predict_once(self, data.element_spec)  # one trace for every batch shape
            logits = super().predict(data, verbose=verbose, steps=steps, callbacks=callbacks)
        else:
            logits = super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps, callbacks=callbacks)
        return softmax(logits)

    def predict_labels(self, pairs, batch_size=None):
        """`[{"label": name, "probabilities": {name: float}}, ...]`, the format of `zoo.load(run).predict`
        and `predict.py`."""
        return [{"label": self.labels[int(np.argmax(p))],
                 "probabilities": {name: float(v) for name, v in zip(self.labels, p)}}
                for p in self.predict(pairs, batch_size=batch_size)]

    # Presets ----------------------------------------------------------------------------------------
    def save_to_preset(self, preset_dir, overwrite=False):
        """Writes this classifier as a preset (see `zoo.presets.saving.write_preset`); a fine-tuned
        classifier's card and metadata say that the results measured before fine-tuning no longer hold.

        Returns:
            the preset directory.
        """
        return write_preset(self, preset_dir, overwrite=overwrite)

    # Config -----------------------------------------------------------------------------------------
    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "backbone": keras.saving.serialize_keras_object(self.backbone),
                "preprocessor": (None if self.preprocessor is None
                                 else keras.saving.serialize_keras_object(self.preprocessor)),
                "optimizer_settings": dict(self.optimizer_settings),
                "preset_metadata": dict(self.preset_metadata), "fine_tuned": self.fine_tuned}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.setdefault("compile", False)  # Keras compiles a loaded model as saved (compile_from_config)
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
