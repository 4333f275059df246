"""nli-zoo: the attention-LSTM models of natural language inference, from data to a served model."""

import logging

from zoo.registry import create_model, get_preset, list_models, register_model

# The zoo speaks through `logging` (a logger per module under "zoo"), and stays silent in an application that
# configures no logging; the command lines print its messages (zoo.commands.messages).
logging.getLogger("zoo").addHandler(logging.NullHandler())

__all__ = ["create_model", "get_preset", "list_models", "register_model", "load", "from_preset", "evaluate", "predict",
           "compare", "EvaluateRequest", "PredictRequest"]

# The requests of `evaluate` and `predict`, imported when first asked for (`zoo.EvaluateRequest`).
_LAZY = {"EvaluateRequest": "zoo.inference.evaluate", "PredictRequest": "zoo.inference.predict"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def load(run_dir):
    """Loads a training run (model with its best weights, vocabulary, tokenizer): see `zoo.runs`."""
    from zoo.quiet import start_runtime  # here, as below: `import zoo` should not import TensorFlow or keras

    start_runtime()  # TensorFlow's notices filtered out of stderr (zoo.quiet)
    from zoo.runs import load_run

    return load_run(run_dir)


def from_preset(preset, compile=True):
    """Loads a preset (a folder, `hf://OWNER/NAME` or `kaggle://OWNER/MODEL/keras/VARIANT`) as a Keras
    classifier taking raw sentence pairs: see `zoo.presets` and docs/presets.md."""
    from zoo.quiet import import_backend, start_runtime

    start_runtime()
    import_backend()
    from zoo.presets import from_preset as load_preset

    return load_preset(preset, compile=compile)


def evaluate(request=None, **fields):
    """Scores a run, a SavedModel, a TFLite export or a preset on labelled data and writes the report: an
    `EvaluateRequest`, or its fields (`zoo.evaluate(run_dir="runs/esim", dataset="snli_sample")`). Returns the
    `zoo.inference.evaluate.Evaluation` (`.results`, `.accuracy(split)`, `.format_scores()`, `.output`)."""
    from zoo.inference.evaluate import EvaluateRequest
    from zoo.inference.evaluate import evaluate as run

    return run(request if request is not None else EvaluateRequest(**fields))


def predict(request=None, **fields):
    """Labels sentence pairs: a `PredictRequest`, or its fields (`zoo.predict(run_dir="runs/esim", premise=...,
    hypothesis=...)`). Returns the `zoo.inference.predict.Predictions` (`.predictions`, `.explanation`, ...)."""
    from zoo.inference.predict import PredictRequest
    from zoo.inference.predict import predict as run

    return run(request if request is not None else PredictRequest(**fields))


def compare(paths, pairs=None, resamples=None, seed=0):
    """Compares the finished runs found under `paths` (a run directory, a folder of runs or a glob pattern, or a
    list of them), seeds grouped: returns the `zoo.comparison.records.Comparison` (`.groups`, `.pairs`,
    `.to_json()`; `zoo.comparison.report.to_markdown(comparison)` is its table).

    Args:
        pairs: `[(a, b)]` groups to test (numbers or labels); None: every two scored on the same items.
        resamples: of the bootstrap (None: `zoo.comparison.statistics.RESAMPLES`); seed: its seed.
    """
    import os

    from zoo.comparison import statistics
    from zoo.comparison.report import compare_paths

    paths = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    return compare_paths(paths, pairs=pairs, resamples=statistics.RESAMPLES if resamples is None else resamples,
                         seed=seed)
