"""Helpers of the export and prediction tests: the pairs exports answer, the models to export, exports
built once across the pytest-xdist workers, and the loader run in a fresh process
(`python -m tests.support.exports`, fed by `FreshLoader`). The runs they export are `tests.support.runs.make_run`'s.
"""

import contextlib
import fcntl
import fnmatch
import json
import os
import time

import zoo

# Tree-based models: the syntactic ones also take binary parses; all are exported like the others.
TREE_MODEL_PATTERNS = ("*tree*", "him", "paria*")

# (premise, hypothesis, premise_binary_parse, hypothesis_binary_parse): binary parses in SNLI's format
# whose leaves are the tokens of the (cased) tokenizer. The second premise has none (complete tree).
PAIRS = [
    ("A man is playing a guitar on stage.", "A person plays music.",
     "( ( A man ) ( ( is ( playing ( ( a guitar ) ( on stage ) ) ) ) . ) )", "( ( A person ) ( ( plays music ) . ) )"),
    ("Two dogs run through the snow.", "The animals are sleeping.",
     "", "( ( The animals ) ( ( are sleeping ) . ) )"),
    ("A woman in a red dress sings.", "Somebody is singing loudly",
     "( ( ( A woman ) ( in ( a ( red dress ) ) ) ) ( sings . ) )", "( Somebody ( is ( singing loudly ) ) )"),
]


def tree_models():
    """Registered tree-based models."""
    return [name for name in zoo.list_models() if any(fnmatch.fnmatch(name, p) for p in TREE_MODEL_PATTERNS)]


# Edge cases of the serving tests: empty sentences, a 5,000-word sentence, non-ASCII text.
EDGE_PAIRS = [
    ("", "A man sleeps."),
    ("", ""),
    (" ".join(["word"] * 5000), "A very long premise."),
    ("Ein Mann spielt Gitarre – ça va? 日本語のテキスト 🎸 «quotes»", "Über naïve café — ‘curly’ “quotes”."),
]


def load_in_fresh_process(lines):
    """Loads SavedModels with `tf.saved_model.load` and runs both signatures on pairs (meant to run in a
    fresh process: `python -m tests.support.exports`, the lines on its stdin; `FreshLoader` starts it).

    Args:
        lines: JSON lines (an iterable of str): first `{"pairs": [[p, h(, p_parse, h_parse)], ...]}`, then one
            job a line, `{"saved_model": DIR, "out": NPZ}`, each run as soon as it is read (so that the
            loading overlaps the writer's next exports), until the end of the input. Each job writes the
            outputs of `serving_default` (keys prefixed `serving_default/`) and `explain` (`explain/`) to its
            `out` file, each signature's input names (`SIGNATURE:inputs`), `serving_default`'s probabilities
            of the first pair alone (`one_pair/probabilities`), the op types of its graph and functions
            (`op_types`), plus `invalid_utf8` (the error of a non-UTF-8 input).
    """
    import json

    import numpy as np
    import tensorflow as tf

    lines = iter(lines)
    pairs = json.loads(next(lines))["pairs"]
    names = ("premise", "hypothesis", "premise_binary_parse", "hypothesis_binary_parse")
    columns = {name: tf.constant([(list(pair) + ["", ""])[i] for pair in pairs], tf.string)
               for i, name in enumerate(names)}
    for line in lines:
        job = json.loads(line)
        loaded = tf.saved_model.load(job["saved_model"])
        arrays = {}
        for name in ("serving_default", "explain"):
            signature = loaded.signatures[name]
            outputs = signature(**{k: columns[k] for k in signature.structured_input_signature[1]})
            arrays.update({f"{name}/{k}": v.numpy() for k, v in outputs.items()})
            arrays[f"{name}:inputs"] = np.array(sorted(signature.structured_input_signature[1]))
        # one pair alone (the demo page's and an online endpoint's request: its own path through the graph)
        signature = loaded.signatures["serving_default"]
        one = signature(**{k: columns[k][:1] for k in signature.structured_input_signature[1]})
        arrays["one_pair/probabilities"] = one["probabilities"].numpy()
        graph = signature.graph.as_graph_def()
        arrays["op_types"] = np.array(sorted({n.op for n in graph.node}
                                             | {n.op for f in graph.library.function for n in f.node_def}))
        try:
            bad = {"premise": tf.constant([b"\xff\xfe bad"]), "hypothesis": tf.constant([b"ok"]),
                   "premise_binary_parse": tf.constant([b""]), "hypothesis_binary_parse": tf.constant([b""])}
            signature = loaded.signatures["serving_default"]
            signature(**{k: bad[k] for k in signature.structured_input_signature[1]})
            arrays["invalid_utf8"] = np.array("no error")
        except tf.errors.InvalidArgumentError as error:
            arrays["invalid_utf8"] = np.array(error.message.splitlines()[0])
        np.savez(job["out"], **arrays)


class FreshLoader:
    """The fresh process of `load_in_fresh_process`, started with the first SavedModel it is given and handed
    each next one as soon as it is written: it loads them while this process exports the others and converts
    them to TFLite (given them all at the end, it ran alone for its last 40-odd seconds).

    Args:
        pairs: the pairs every SavedModel answers.
        log_name: the file name of the process' output, beside the first SavedModel's `out`.
        cwd, env: the process' working directory and environment.
    """

    def __init__(self, pairs, log_name, cwd, env):
        self.pairs, self.log_name, self.cwd, self.env = pairs, log_name, cwd, env
        self.process = self.log = None

    def load(self, saved_model, out):
        """Hands the job `{"saved_model": saved_model, "out": out}` to the process (started on the first)."""
        import subprocess
        import sys

        if self.process is None:
            self.log = open(os.path.join(os.path.dirname(out), self.log_name), "w+", encoding="utf-8")
            self.process = subprocess.Popen([sys.executable, "-m", "tests.support.exports"], cwd=self.cwd,
                                            env=self.env, stdin=subprocess.PIPE, stdout=self.log,
                                            stderr=subprocess.STDOUT, text=True, encoding="utf-8")
            self._send({"pairs": self.pairs})
        self._send({"saved_model": saved_model, "out": out})

    def _send(self, message):
        try:
            self.process.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
            self.process.stdin.flush()
        except OSError:  # the process ended early: `finish` reports its status and output
            pass

    def finish(self, timeout=600):
        """Ends the input and waits for the process: `(returncode, the output's last 3,000 characters)`;
        `(0, "")` when it was never started."""
        if self.process is None:
            return 0, ""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait(timeout=timeout)
        self.log.seek(0)
        output = self.log.read()[-3000:]
        self.log.close()
        return self.process.returncode, output


# Exports shared by the pytest-xdist workers ------------------------------------------------------
def shared_dir(tmp_path_factory, name):
    """A directory shared by all xdist workers of this test session (per-process without xdist)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def file_lock(path):
    """An exclusive `flock` on `path` (blocks until free)."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def work_order(models):
    """This worker's models first, then the others' in reverse (so that an idle worker takes over
    the models another worker has not reached yet)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index, count = int(worker[2:] or 0), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = models[index::count]
    return mine + [m for m in reversed(models) if m not in mine]


def build_exports(root, models, pairs, build_one, load_many, timeout=900):
    """Builds every model's exports once across xdist workers and returns their manifests.

    Each model is built under its lock by whichever worker gets there first (`build_one(name, dir)`
    returns a JSON-able manifest; it may hand the model to a `FreshLoader`); the models a worker built are
    then finished together (`load_many([(name, dir), ...])`, which writes `dir/loaded.npz` or waits for the
    loader that does, and `dir/loaded.done`); finally every manifest is read, waiting for the other
    workers' loads.

    Returns:
        `{name: manifest}` with `"dir"` added.
    """
    built = []
    for name in work_order(models):
        directory = root / name
        with file_lock(root / f"{name}.lock"):
            if not (directory / "manifest.json").exists():
                directory.mkdir(exist_ok=True)
                manifest = build_one(name, directory)
                (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
                built.append((name, directory))
    if built:
        load_many(built)
    manifests = {}
    deadline = time.time() + timeout
    for name in models:
        directory = root / name
        while not (directory / "loaded.done").exists():
            if time.time() > deadline:
                raise TimeoutError(f"no fresh-process results for {name} in {root}")
            time.sleep(0.5)
        manifests[name] = dict(json.loads((directory / "manifest.json").read_text(encoding="utf-8")),
                               dir=str(directory))
    return manifests


if __name__ == "__main__":
    import sys

    load_in_fresh_process(sys.stdin)
