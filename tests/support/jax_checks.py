"""The checks on the JAX backend, run once per test session in one subprocess (`python -m
tests.support.jax_checks REPORT.json`, `KERAS_BACKEND=jax`: the backend is fixed per process): the most
demanding preset of every model class (`tests.support.models.expensive_models`) for tests/test_models.py
(it runs jitted and one training step moves its weights) and tests/test_serialization.py (its `.keras`
round trip gives the same function and outputs), and the zoo's recurrent loops for tests/test_recurrent.py.

Each model is built once and its `explain()` compiled once for both: the loaded model's, run with the
original weights (the same function of weights and inputs: `same_graph` compares the two jaxprs) and with
the restored ones. One process instead of two saves JAX's and TensorFlow's start, a build and an XLA
compilation of every model (the three tests alone, idle, one process: 190 s of CPU against 250 s).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.exports import file_lock, shared_dir

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 900  # seconds; generous so that a slow CI machine fails a test rather than hanging it
# XLA's CPU compiler without its costly optimizations: the checks ask what the compiled functions compute, not
# how fast, and the compilations of the 23 models are most of the subprocess' work (idle, this machine: 247 s
# of CPU with XLA's defaults, 133 s with these; every report field the same, the losses within 1e-5)
FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")


def jax_report(tmp_path_factory):
    """The subprocess' report, run by whichever xdist worker asks first (the other reads its file).

    Returns:
        `{"returncode": int, "stderr": the last 3,000 characters, "report": {...} or None}`; the report has one
        entry per model (`same_class`, `same_config`, `same_graph`, `keys`, `diff`, `finite`, `loss`,
        `unchanged`), `fit_after_load`, `unbuilt_warnings` and `recurrent` (`check_recurrent_loops`).
    """
    root = shared_dir(tmp_path_factory, "jax-checks")
    path = root / "report.json"
    with file_lock(root / "report.lock"):
        if not path.exists():
            env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
                   "XLA_FLAGS": " ".join(filter(None, [os.environ.get("XLA_FLAGS"), *FAST_COMPILE]))}
            proc = subprocess.run([sys.executable, "-m", "tests.support.jax_checks", str(root / "models.json")],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            report = root / "models.json"
            path.write_text(json.dumps({"returncode": proc.returncode, "stderr": proc.stderr[-3000:],
                                        "report": json.loads(report.read_text()) if report.exists() else None}))
    return json.loads(path.read_text())


def check_every_model(out):
    """Runs in the JAX subprocess: writes the report to `out` (see `jax_report`)."""
    import tempfile
    import warnings

    import jax
    import keras
    import numpy as np

    from tests.support import models as tc

    assert keras.backend.backend() == "jax", keras.backend.backend()

    def stateless_explain(model):  # model.explain(batch) as a function of the values of model.variables
        def explain(values, batch):
            with keras.StatelessScope(state_mapping=list(zip(model.variables, values))):
                return model.explain(batch)
        return explain

    report, directory = {}, tempfile.mkdtemp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in tc.expensive_models():
            # build() creates every weight without a forward pass (tests.support.models.check_model checks
            # it); test sizes: the tree models' level loops cover the batch's at most 7 words, not the presets' 48
            model = tc.make_unbuilt_model(name)
            model.build()
            pairs = tc.random_pairs(batch=4)
            batch = tc.model_inputs(model, pairs)  # with parse trees for the models that read them
            model.save(os.path.join(directory, name + ".keras"))
            loaded = keras.models.load_model(os.path.join(directory, name + ".keras"))
            saved = [v.value for v in model.variables]
            restored = [v.value for v in loaded.variables]
            same_graph = (str(jax.make_jaxpr(stateless_explain(model))(saved, batch))
                          == str(jax.make_jaxpr(stateless_explain(loaded))(restored, batch)))
            # explain() jitted, as Keras's own predict and fit run under JAX (an eager first call compiles
            # every op apart, at two to four times the cost): the original weights, then the restored ones
            explain = jax.jit(stateless_explain(loaded))
            before, after = explain(saved, batch), explain(restored, batch)
            entry = {"same_class": type(loaded) is type(model),
                     "same_config": loaded.get_config() == model.get_config(),
                     "same_graph": same_graph, "keys": sorted(before) == sorted(after),
                     "diff": max(float(np.max(np.abs(np.asarray(before[k], "float64")
                                                     - np.asarray(after[k], "float64")))) for k in before),
                     "finite": bool(all(np.all(np.isfinite(np.asarray(v))) for v in before.values()))}
            # One training step on the pairs alone (a syntactic tree model then reads complete trees): Adam
            # moves every weight whose gradient is non-zero; a weight without gradient stays bit-identical.
            model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            tc.perturb_zero_kernels(model)
            weights = [np.array(v) for v in model.trainable_variables]
            entry["loss"] = float(model.train_on_batch(pairs, np.arange(4) % 3))
            entry["unchanged"] = [v.path for w, v in zip(weights, model.trainable_variables)
                                  if np.array_equal(w, np.array(v))]
            report[name] = entry
        # Training after the round trip, with frozen pretrained words and a few tunable ones.
        model, batch, labels = tc.frozen_word_setup("rocktaschel_wbw", run_eagerly=False)
        model.save(os.path.join(directory, "trained.keras"))
        loaded = keras.models.load_model(os.path.join(directory, "trained.keras"))
        frozen, tunable = tc.word_tables(loaded)
        loss = loaded.fit(batch, labels, batch_size=8, epochs=1, verbose=0).history["loss"][-1]
        frozen_after, tunable_after = tc.word_tables(loaded)
        report["fit_after_load"] = {"loss": float(loss),
                                    "frozen_kept": bool(np.array_equal(frozen[0], frozen_after[0])),
                                    "tunable_moved": not np.array_equal(tunable[0], tunable_after[0])}
    report["unbuilt_warnings"] = tc.unbuilt_state_warnings(caught)
    report["recurrent"] = check_recurrent_loops()
    Path(out).write_text(json.dumps(report))


def check_recurrent_loops():
    """For tests/test_recurrent.py: the fused loop's largest difference from Keras's on one bi-LSTM, and the
    error (None: none) of one training step of ESIM on either loop (`jax.custom_gradient`)."""
    import traceback

    import numpy as np

    from tests.support.recurrent import both_paths, make_inputs, make_layer, same_step_on_either_loop

    layer = make_layer()
    x, mask = make_inputs()
    fused, reference = both_paths(layer, x, mask)
    try:
        same_step_on_either_loop("esim", "auto")
        step_error = None
    except Exception:  # reported by the test that asks for it; the models' checks stand apart
        step_error = traceback.format_exc()[-3000:]
    return {"difference": float(np.abs(fused - reference).max()), "step_error": step_error}


if __name__ == "__main__":
    check_every_model(sys.argv[1])
