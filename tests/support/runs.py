"""Tiny runs for the tests, built through the library, and train.py's tiny command lines.

A run directory made by `make_run` looks like one written by `train.py` before its first epoch (config.json,
vocab.txt, best.weights.h5; `zoo.training.untrained.write_untrained_run`), with random weights, 8-d vectors
and hidden size 8, so that export, reload and comparison stay fast. `tiny_args` is the command line of a run
train.py finishes in seconds; `stop_at`, `comparable` and `assert_same` are the fault tests' kill and
comparison of a resumed run with the uninterrupted one.
"""

import functools
import json
import os
from pathlib import Path

import pytest

import zoo
from zoo.data.embeddings import EmbeddingMatrix
from zoo.data.snli import load_snli
from zoo.data.tokenizer import Tokenizer
from zoo.data.vocab import Vocabulary
from zoo.fileio import faults as fileio_faults
from zoo.runs import faults, layout
from zoo.runs.directory import RunDirectory
from zoo.runs.record import save_record
from zoo.runs.results import RunResults
from zoo.training.config import RunConfig
from zoo.training.untrained import new_record, write_untrained_run

ROOT = Path(__file__).resolve().parents[2]

# Untrained runs (`make_run`) -------------------------------------------------------------------------
SMALL = {"hidden_size": 8, "mlp_size": 8, "operator_size": 8}


@functools.lru_cache(maxsize=None)
def sample_vocabulary(lowercase, examples=200):
    """A vocabulary of the first `examples` training pairs of the shipped sample (cached)."""
    splits, _ = load_snli("snli_sample")
    tokenizer = Tokenizer(lowercase=lowercase)
    texts = [ex[k] for ex in splits["train"][:examples] for k in ("premise", "hypothesis")]
    return Vocabulary.build(tokenizer.tokenize_batch(texts))


def make_run(run_dir, model_name, embedding_dim=8, seed=0, **options):
    """Writes an untrained run directory of `model_name` through the library (`write_untrained_run`: what
    train.py writes before its first epoch, plus the best weights), at the small sizes of `SMALL`.

    Args:
        run_dir: the directory to create.
        model_name: a registered model.
        embedding_dim: word vector size.
        seed: initial weights seed.
        **options: more `RunConfig.create` arguments (`overrides` are merged with `SMALL`).

    Returns:
        `run_dir`.
    """
    small = {k: v for k, v in SMALL.items() if k in zoo.get_preset(model_name).model}
    config = RunConfig.create(model=model_name, dataset="snli_sample", embeddings="none",
                              embedding_dim=embedding_dim, seed=seed, run_dir=str(run_dir),
                              overrides={**small, **options.pop("overrides", {})}, **options)
    return write_untrained_run(config, sample_vocabulary(config.data.lowercase))


def write_record(run_dir, model_name, seed=0, **options):
    """Writes only a run's `config.json`, through the library (`RunConfig`, then the record training
    derives): for tests of what reads records and results (compare) without a model (finish it with
    `write_results`).

    Args:
        **options: more `RunConfig.create` arguments (default `dataset="snli_sample"`, `embeddings="none"`,
            `embedding_dim=8`).
    """
    options = {"dataset": "snli_sample", "embeddings": "none", "embedding_dim": 8, **options}
    config = RunConfig.create(model=model_name, seed=seed, run_dir=str(run_dir), **options)
    vocab = sample_vocabulary(config.data.lowercase, examples=20)
    save_record(str(run_dir), new_record(config, vocab, EmbeddingMatrix.random(config.random_vectors_dim)))
    return str(run_dir)


def write_results(run_dir, results):
    """Writes a run's results.json as training does (`RunDirectory.write_results`: sealed by the run's
    manifest), for tests whose runs are finished without training (`results`: the file's content, checked as
    `RunResults.from_json` reads it)."""
    RunDirectory(run_dir).write_results(RunResults.from_json(results))


def finished_run(run_dir, model_name, dev=0.4375, test=0.40625, **options):
    """An untrained run directory (`make_run`) with the results.json of a finished train.py run."""
    make_run(run_dir, model_name, max_train_examples=64, max_eval_examples=32, epochs=1, **options)
    per_class = {"entailment": 0.5, "neutral": 0.25, "contradiction": 0.5}
    write_results(run_dir, {
        "model": model_name, "dev_accuracy": dev, "test_accuracy": test,
        "dev": {"accuracy": dev, "examples": 32, "per_class_accuracy": per_class},
        "test": {"accuracy": test, "examples": 32, "per_class_accuracy": per_class},
        "epochs_run": 1, "best_epoch": 1,
        "embeddings": {"source": "none", "dim": 8, "coverage": None, "tunable_words": "all", "num_tunable": 0}})
    return run_dir


# train.py's tiny runs -------------------------------------------------------------------------------
TINY_MODEL = "rocktaschel_wbw"  # attends, so attention images are drawn
# No attention or confusion images (`--images-every 0`): they cost about 0.7 s of a tiny run's 6 s, and the
# tests that check them ask for them (tests/test_train.py's `trained`, tests/test_train_images.py).
TINY = ["--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "8",
        "--max-train-examples", "64", "--max-eval-examples", "32", "--set", "hidden_size=8",
        "--batch-size", "16", "--keras-verbose", "2", "--images-every", "0"]
# Sentences cut to the length grid's first cell: every batch has one shape, so a process traces its steps
# once (for the tests whose subject is not the batch shapes).
ONE_SHAPE = ["--set", "max_premise_length=14", "--set", "max_hypothesis_length=10"]


def tiny_args(run_dir, *extra, model=TINY_MODEL):
    """Command line arguments of a tiny run in `run_dir`."""
    return ["--model", model, *TINY, "--run-dir", str(run_dir), *extra]


def subprocess_env():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    return env


def hparams_table(logdir):
    """`(experiment, session groups)` as TensorBoard's HParams dashboard gets them with `tensorboard --logdir
    LOGDIR`: the plugin's own handlers over a data provider of the event files."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.hparams import api_pb2, backend_context, get_experiment, list_session_groups

    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(logdir))
    backend = backend_context.Context(base_plugin.TBContext(logdir=str(logdir), multiplexer=multiplexer,
                                                            data_provider=provider))
    ctx = context.RequestContext()
    experiment = get_experiment.Handler(ctx, backend, "", api_pb2.GetExperimentRequest()).run()
    statuses = [api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE, api_pb2.STATUS_RUNNING]
    request = api_pb2.ListSessionGroupsRequest(start_index=0, slice_size=100, allowed_statuses=statuses)
    return experiment, list(list_session_groups.Handler(ctx, backend, "", request).run().session_groups)


# Kills between write steps (tests/test_protocol.py, tests/test_reliability_runs.py) ------------------
# The fault tests' run: a hidden size of 4, 32 training pairs of the shipped sample, 3 epochs, sentences cut to
# the length grid's first cell, nothing drawn or logged per batch.
FAULT_ARGS = ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "4",
              "--max-train-examples", "32", "--max-eval-examples", "16", "--set", "hidden_size=4", "--batch-size",
              "16", "--epochs", "3", "--attention-examples", "0", "--images-every", "0", "--log-every", "0",
              "--keras-verbose", "0", "--set", "max_premise_length=14", "--set", "max_hypothesis_length=10"]


def fault_args(run_dir, *extra):
    """train.py's command line of the fault tests' run in `run_dir` (`FAULT_ARGS`), then `extra`."""
    return [*FAULT_ARGS, "--run-dir", str(run_dir), *extra]

class Killed(BaseException):
    """The in-process kill: a BaseException, so that no `except Exception` of the code under test runs."""


def stop_at(monkeypatch, point, argv):
    """Runs train.py with `argv` in this process, killed (in-process) right after the write step `point`."""
    import train as train_script  # the script at the repository's root (on sys.path under pytest)

    def kill(step, epoch):
        raise Killed(f"{step}@{epoch}")

    with monkeypatch.context() as patch:
        patch.setattr(fileio_faults, "kill", kill)
        patch.setenv(faults.FAULT_ENV, point)
        with pytest.raises(Killed):
            train_script.main(argv)


def comparable_history(history):
    return [{k: v for k, v in entry.items() if k != "time"} for entry in history]


def comparable(run_dir):
    """What must not depend on where a run was killed: history.json and results.json, less clock times."""
    history = json.loads((run_dir / layout.HISTORY_FILE).read_text())
    results = json.loads((run_dir / layout.RESULTS_FILE).read_text())
    kept = {k: results[k] for k in ("test", "dev", "test_accuracy", "dev_accuracy", "epochs_run", "best_epoch",
                                    "parameters", "labels")}
    kept["history"] = comparable_history(results["history"])
    return {"history": comparable_history(history["epochs"]), "finished": history["finished"], "results": kept}


def assert_same(a, b):
    """Same history and results, to float32's last digits."""
    assert a["finished"] and b["finished"]
    for history in ("history", "results"):
        x = a["history"] if history == "history" else a["results"]["history"]
        y = b["history"] if history == "history" else b["results"]["history"]
        assert [e["epoch"] for e in x] == [e["epoch"] for e in y]
        for p, q in zip(x, y):
            assert p.keys() == q.keys()
            for key in p:
                assert q[key] == pytest.approx(p[key], rel=1e-6, abs=1e-7), (history, p["epoch"], key, x, y)
    for key in ("test", "dev", "test_accuracy", "dev_accuracy", "epochs_run", "best_epoch", "parameters", "labels"):
        assert json.dumps(a["results"][key], sort_keys=True) == json.dumps(b["results"][key], sort_keys=True), key
