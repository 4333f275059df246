"""What can be checked on a CPU of the fast GPU path (zoo.training.kernels): every LSTM qualifies for cuDNN,
the masks it gets are ones cuDNN accepts, and `--jit-compile true` really compiles the whole step."""

import keras
import numpy as np
import pytest

import zoo
from tests.support.models import make_model, random_pairs
from zoo.training.kernels import cudnn_capable, gpu_plan, iter_layers, use_xla_loops

ALL = zoo.list_models()


@pytest.mark.parametrize("name", ALL)
def test_no_lstm_falls_off_the_cudnn_path(name):
    plan = gpu_plan(make_model(name))
    assert plan["other_lstms"] == []
    # Keras turns XLA off exactly when a cuDNN LSTM is present.
    assert plan["xla"] == (not plan["cudnn_lstms"])
    assert gpu_plan(make_model(name), distributed=True)["xla"] is False


@pytest.mark.parametrize("name", ALL)
def test_lstm_masks_are_right_padded_with_a_real_position(name, monkeypatch):
    """cuDNN asserts that every mask row is True then False (right padding) and not all False."""
    masks = []
    original = keras.layers.LSTM.call

    def recording(self, sequences, initial_state=None, mask=None, training=False):
        if mask is not None:
            masks.append(np.asarray(mask))
        return original(self, sequences, initial_state=initial_state, mask=mask, training=training)

    monkeypatch.setattr(keras.layers.LSTM, "call", recording)
    model = make_model(name)
    batch = random_pairs(batch=5, seed=4)
    batch["hypothesis"][2] = 0   # an empty hypothesis (an empty request string gives one)
    batch["premise"][3] = 0      # and an empty premise
    batch = {k: np.pad(v, ((0, 0), (0, 3))) for k, v in batch.items()}
    if model.reads_parse_trees:
        pytest.skip("reads trees, no keras LSTM")
    model.lstm_loop = "keras"    # what a GPU runs (zoo.layers.loop_choice); a CPU packs the bi-LSTMs
    model.explain(batch)
    lstms = [layer for layer in iter_layers(model) if isinstance(layer, keras.layers.LSTM)]
    if not lstms:
        assert not masks
        return
    assert masks, "the LSTMs got no mask"
    for mask in masks:
        lengths = mask.sum(axis=1)
        assert np.array_equal(mask, np.arange(mask.shape[1])[None, :] < lengths[:, None]), "not right-padded"
        assert (lengths >= 1).all(), "a fully masked row: cuDNN refuses it"


def test_xla_loops_compile_the_whole_step_and_compute_the_same():
    model = make_model("rocktaschel_wbw", dropout=0.0)
    batch = random_pairs(batch=4)
    before = np.asarray(model(batch))
    lstms = [layer for layer in iter_layers(model) if isinstance(layer, keras.layers.LSTM)]
    assert lstms and all(cudnn_capable(layer) for layer in lstms)
    assert sorted(use_xla_loops(model)) == sorted(layer.name for layer in lstms)
    assert gpu_plan(model)["xla"] and not any(cudnn_capable(layer) for layer in lstms)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    assert model.jit_compile is True
    np.testing.assert_allclose(np.asarray(model.predict(batch, verbose=0)), before, atol=1e-5)
    model.train_on_batch(batch, np.zeros(4, "int32"))
