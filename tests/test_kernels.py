"""What can be checked on a CPU of the fast GPU path (zoo.training.kernels): `--jit-compile true` really
compiles the whole step. That every LSTM of every registered model qualifies for cuDNN and gets masks cuDNN
accepts is the per-model harness's (`tests.support.models.check_gpu_path`)."""

import keras
import numpy as np
import pytest

from tests.support.models import make_model, random_pairs
from zoo.training.kernels import cudnn_capable, gpu_plan, iter_layers, use_xla_loops


@pytest.mark.large
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
