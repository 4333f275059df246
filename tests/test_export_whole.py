"""Exports written whole (issue 24): under the run's lock and the target's lock, built beside the target and
renamed into place, so that a kill -9 between any two writes leaves the old export or the new one, and the next
export cleans up what the killed one left. Tiny untrained runs (tests/support/runs.py), killed by the
`NLI_ZOO_FAULT_AT` hook between two writes, not by timing."""

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

import zoo
from tests.support.exports import PAIRS
from tests.support.runs import make_run
from zoo import fileio
from zoo.export import ExportError, export_saved_model
from zoo.export.exporting import FAULT_STEPS
from zoo.export.saved_model import checked_request
from zoo.export.serving import RequestError, grpc_predict, signature_error
from zoo.export.serving_files import existing_versions
from zoo.export.tflite import export_tflite
from zoo.predictors import open_predictor
from zoo.runs import layout

ROOT = Path(__file__).resolve().parent.parent
MODEL = "bowman_lstm"


def env(**extra):
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT), **extra)


def probabilities(path):
    return open_predictor(path).predict_probabilities(PAIRS)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of one model with other weights (A: seed 0, B: seed 1), A's TFLite export and SavedModel,
    and the Keras probabilities of both (what an export of each answers)."""
    root = tmp_path_factory.mktemp("whole")
    a = zoo.load(make_run(root / "a", MODEL, seed=0))
    b = zoo.load(make_run(root / "b", MODEL, seed=1))
    tflite = Path(export_tflite(a, str(root / "old_tflite"), batch_size=2)).parent
    saved = Path(export_saved_model(a, str(root / "old_models"), serving_files=False, log=print)).parent
    return {"a": a, "b": b, "tflite": tflite, "saved": saved, "root": root,
            "expected": {"a": a.predict_probabilities(PAIRS), "b": b.predict_probabilities(PAIRS)}}


def which(got, expected):
    """"a" or "b": whose probabilities an export answers with (fails for anything else)."""
    for name in ("a", "b"):
        if np.allclose(got, expected[name], atol=1e-4):
            return name
    raise AssertionError(f"the export answers neither as run A nor as run B: {got}")


def leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


# export.py's main in a child forked per job from one process that imported the command once (TensorFlow's
# import is most of a process start; nothing of TensorFlow runs before the fork, as in tests/test_presets.py's
# KILL_DRIVER): `{"args", "fault", "stderr"}` per line in (the child's output goes to the file "stderr"), the
# child's exit status per line out (negative: the signal that ended it).
FORK_SERVER = """
import json, os, signal, sys, time
import export as export_script
from zoo import fileio
from zoo.quiet import import_tensorflow
import_tensorflow()
import zoo.export.saved_model, zoo.export.serving_files, zoo.export.tflite, zoo.presets, zoo.runs  # main's imports
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with open(job["stderr"], "w") as err:  # the command's output (stdout is the server's answers)
                os.dup2(err.fileno(), 1)
                os.dup2(err.fileno(), 2)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            os.environ.pop(fileio.FAULT_VARIABLE, None)
            if job["fault"]:
                os.environ[fileio.FAULT_VARIABLE] = job["fault"]
            export_script.main(job["args"])
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline, done = time.monotonic() + 600, 0
    while not done:
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done and time.monotonic() > deadline:  # a child that hangs is killed, and reported as such
            os.kill(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0)[0], None
        time.sleep(0 if done else 0.05)
    if status is None:
        print(json.dumps("timed out"), flush=True)
    else:
        print(json.dumps(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)), flush=True)
"""


@pytest.fixture(scope="module")
def export_cli(tmp_path_factory):
    """`export_cli(*args, fault=STEP)`: export.py with `args` in a forked child of `FORK_SERVER`, killed by
    its own `NLI_ZOO_FAULT_AT` hook at STEP (a real SIGKILL); returns `(returncode, stderr)` as attributes."""
    logs = tmp_path_factory.mktemp("export_cli")
    server = subprocess.Popen([sys.executable, "-c", FORK_SERVER], cwd=ROOT, env=env(), text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def run(*args, fault=None):
        stderr = logs / f"job-{len(list(logs.iterdir()))}.err"
        server.stdin.write(json.dumps({"args": [str(a) for a in args], "fault": fault, "stderr": str(stderr)}) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        assert line, "the export server ended"
        returncode = json.loads(line)
        assert returncode != "timed out", f"export.py {args} did not end in 600 s"
        return subprocess.CompletedProcess(args, returncode, "", stderr.read_text(errors="replace"))

    yield run
    server.stdin.close()
    server.wait(timeout=60)


def test_every_fault_step_is_a_hook_in_the_export_code():
    """FAULT_STEPS lists exactly the hooks the export code has (so the kill tests below know every step)."""
    found = set()
    for path in list((ROOT / "zoo" / "export").glob("*.py")) + [ROOT / "zoo" / "fileio" / "folders.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(node.func, "attr", getattr(node.func, "id", None)) if isinstance(node, ast.Call) else None
            if name == "fault_point":
                argument = node.args[0]
                if isinstance(argument, ast.Constant):
                    found.add(argument.value)
                else:  # publish_folder's f"{fault_step}:old-moved-aside": the TFLite export passes "export:tflite"
                    found.add("export:tflite" + argument.values[-1].value)
    assert found == {step for steps in FAULT_STEPS.values() for step in steps}


@pytest.mark.large
def test_an_export_refuses_a_run_that_trains_in_one_line(runs, tmp_path):
    run = zoo.load(shutil.copytree(runs["a"].run_dir, tmp_path / "run"))
    with layout.lock(run.run_dir):  # what train.py holds while it trains
        for export in (lambda: export_saved_model(run, str(tmp_path / "models" / "m")),
                       lambda: export_tflite(run, str(tmp_path / "models" / "m_tflite"))):
            with pytest.raises(ExportError) as error:
                export()
            message = str(error.value)
            assert "\n" not in message and message.startswith(f"cannot export {run.run_dir}: the run directory")
            assert f"in use by PID {os.getpid()}" in message
    assert not (tmp_path / "models").exists() or os.listdir(tmp_path / "models") == []  # no empty folder left


@pytest.mark.large
def test_a_second_tflite_export_into_one_folder_is_refused_in_one_line(runs, tmp_path):
    out = tmp_path / "models" / "shared_tflite"
    run = zoo.load(shutil.copytree(runs["b"].run_dir, tmp_path / "run"))
    # the lock another export of another run holds on the folder (beside it: the folder is replaced whole)
    with fileio.DirectoryLock(out, what="TFLite export folder", lock_file=fileio.sibling_lock_file(out)):
        with pytest.raises(ExportError) as error:
            export_tflite(run, str(out))
    assert "\n" not in str(error.value)
    assert str(error.value).startswith(f"the TFLite export folder {out} is in use by PID {os.getpid()}")
    assert not out.exists() and leftovers(out.parent) == []


@pytest.mark.large
def test_a_folder_holding_other_files_is_not_replaced(runs, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    run = zoo.load(shutil.copytree(runs["b"].run_dir, tmp_path / "run"))
    with pytest.raises(ExportError, match=r"holds files other than a TFLite export \(notes.txt\)"):
        export_tflite(run, str(tmp_path / "out"), overwrite=True)
    assert os.listdir(tmp_path / "out") == ["notes.txt"]


@pytest.mark.large
@pytest.mark.parametrize("step", ["export:tflite:model-written", "export:tflite:exchanged"])
def test_kill_during_tflite_overwrite_leaves_the_old_export_or_the_new_one_whole(runs, export_cli, tmp_path, step):
    """export --format tflite --overwrite killed at `step` (while staging; once the new folder is swapped in, the
    old one not yet removed): the folder then answers as the old export or as the new one, a rerun without
    --overwrite is refused in one line, one with it replaces the export, and nothing is left beside it. (Where
    the system cannot swap two folders in one step, the kills between the two renames: tests/test_fileio.py.)"""
    out = tmp_path / "models" / "m_tflite"
    shutil.copytree(runs["tflite"], out)
    run_b = shutil.copytree(runs["b"].run_dir, tmp_path / "run_b")
    args = ["--run-dir", str(run_b), "--format", "tflite", "--out", str(out), "--tflite-batch-size", "2",
            "--no-accuracy-check"]
    killed = export_cli(*args, "--overwrite", fault=step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run = zoo.load(str(run_b))
    with pytest.raises(ExportError) as refused:  # recovers what the kill left, then refuses to replace the export
        export_tflite(run, str(out), batch_size=2)
    assert "\n" not in str(refused.value) and "already exists; pass --overwrite" in str(refused.value)
    assert leftovers(out.parent) == []
    whose = which(probabilities(str(out)), runs["expected"])
    assert whose == ("a" if step == "export:tflite:model-written" else "b")
    export_tflite(run, str(out), batch_size=2, overwrite=True)
    assert which(probabilities(str(out)), runs["expected"]) == "b" and leftovers(out.parent) == []


@pytest.mark.large
def test_a_mixed_tflite_folder_is_refused_in_one_line(runs, tmp_path):
    """The files of two exports mixed (what an interrupted export of earlier versions left): refused, naming the
    file, instead of an interpreter's "gather index out of bounds"."""
    out = shutil.copytree(runs["tflite"], tmp_path / "mixed")
    other = Path(export_tflite(runs["b"], str(tmp_path / "other"), batch_size=2, max_vocabulary=50)).parent
    shutil.copy(other / "vocab.txt", out / "vocab.txt")
    with pytest.raises(ValueError, match=r"vocab.txt does not match its SHA-256 in manifest.json .*--overwrite"):
        open_predictor(str(out))
    # tflite.json is covered too: its labels reversed would answer "entailment" for "contradiction"
    side = shutil.copytree(runs["tflite"], tmp_path / "side")
    metadata = json.loads((side / "tflite.json").read_text())
    (side / "tflite.json").write_text(json.dumps(dict(metadata, labels=metadata["labels"][::-1])))
    with pytest.raises(ValueError, match=r"tflite.json does not match its SHA-256 in manifest.json"):
        open_predictor(str(side))
    # an export written before manifests (none, and tflite.json not naming one): tflite.json's own checksums
    os.remove(out / "manifest.json")
    metadata = json.loads((out / "tflite.json").read_text())
    (out / "tflite.json").write_text(json.dumps({k: v for k, v in metadata.items() if k != "manifest"}))
    with pytest.raises(ValueError, match=r"vocab.txt is not the file tflite.json was written with: .*--overwrite"):
        open_predictor(str(out))
    predicted = subprocess.run([sys.executable, "predict.py", "--tflite", str(out), "--premise", "A man.",
                                "--hypothesis", "A dog."], cwd=ROOT, env=env(), capture_output=True, text=True,
                               timeout=300)
    assert predicted.returncode == 2 and "Traceback" not in predicted.stderr
    assert "predict.py: error: " in predicted.stderr and "export again with --overwrite" in predicted.stderr


@pytest.mark.large
@pytest.mark.parametrize("step", ["export:saved_model:staged", "export:saved_model:version-reserved",
                                  "export:saved_model:batching-written"])
def test_kill_during_a_saved_model_export_leaves_whole_versions(runs, export_cli, tmp_path, step):
    """A SavedModel export killed at `step`: every version folder TF Serving sees is whole (the old one still
    answers as run A), and the next export removes the temporary folder or the empty version it left."""
    model_dir = shutil.copytree(runs["saved"], tmp_path / "models" / "m")
    run_b = shutil.copytree(runs["b"].run_dir, tmp_path / "run_b")
    killed = export_cli("--run-dir", str(run_b), "--out", str(model_dir), "--allowed-batch-sizes", "1",
                        fault=step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    versions = sorted(int(n) for n in os.listdir(model_dir) if n.isdigit())
    assert [v for v in versions if not (model_dir / str(v) / "saved_model.pb").exists()] == \
        ([2] if step == "export:saved_model:version-reserved" else [])
    assert which(probabilities(str(model_dir / "1")), runs["expected"]) == "a"
    path = export_saved_model(zoo.load(str(run_b)), str(model_dir), batch_sizes=(1,))
    expected_version = 3 if step == "export:saved_model:batching-written" else 2
    assert path == str(model_dir / str(expected_version))
    assert existing_versions(model_dir) == sorted({1, 2, expected_version})
    assert [n for n in os.listdir(model_dir) if n.startswith(".")] == []
    assert which(probabilities(str(model_dir)), runs["expected"]) == "b"  # the latest version


@pytest.mark.large
def test_serving_requests_are_checked_and_cut_sentences_counted(runs, capfd):
    """What the serving signatures say about a request: a scalar, rows that differ and invalid UTF-8 are
    refused naming the field; cut and empty sentences are counted (`explain`) and logged (`serving_default`)."""
    loaded = tf.saved_model.load(str(runs["saved"] / "1"))
    long = " ".join(["word"] * 130)  # the preset cuts sentences to 100 tokens
    texts = {"premise": tf.constant([long, "", "A man sleeps."]), "hypothesis": tf.constant(["A man.", "", "Sleep."])}
    capfd.readouterr()
    outputs = loaded.signatures["explain"](**texts)
    assert outputs["tokens_cut"].numpy().tolist() == [30, 0, 0]
    assert outputs["empty_sentences"].numpy().tolist() == [0, 2, 0]
    loaded.signatures["serving_default"](**texts)
    logged = capfd.readouterr().err
    assert "[nli-zoo] 1 of 3 pairs cut to 100/100 tokens (30 tokens dropped); 2 empty sentences" in logged
    loaded.signatures["serving_default"](premise=tf.constant(["A man."]), hypothesis=tf.constant(["A dog."]))
    assert "[nli-zoo]" not in capfd.readouterr().err  # nothing cut, nothing logged
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        loaded.signatures["serving_default"](premise=tf.constant(["fine", b"\xff\xfe bad"]),
                                             hypothesis=tf.constant(["a", "b"]))
    assert signature_error(error.value) == "assertion failed: [premise[1]: not valid UTF-8 text]"
    # TF Serving feeds a scalar as it is: the graph's check names the field (run here on the check itself)
    with pytest.raises(tf.errors.InvalidArgumentError, match="premise must be a list of strings, one per pair"):
        checked_request({"premise": tf.constant("A man."), "hypothesis": tf.constant("A dog.")})
    request = predict_pb2.PredictRequest()
    for name in ("premise", "hypothesis"):
        request.inputs[name].CopyFrom(tf.make_tensor_proto("A man.", dtype=tf.string))
    with pytest.raises(RequestError, match=r"input '(premise|hypothesis)' must be a list of strings, one per pair"):
        grpc_predict(loaded, request)
    # an empty batch and a nested list, fed to the graph as TF Serving feeds them (past the signature's shape):
    # one assertion naming the input, not a graph error
    for signature in ("serving_default", "explain"):
        function = loaded.signatures[signature]
        for bad, words in ((tf.constant([], tf.string), "is an empty list: send at least one pair"),
                           (tf.constant([["A man.", "A dog."]]), "must be a list of strings, one per pair, not a "
                                                                 "nested list")):
            with pytest.raises(tf.errors.InvalidArgumentError) as error:  # inputs flattened in sorted name order
                function._call_flat([bad, bad], function.captured_inputs)
            line = signature_error(error.value)
            assert words in line and line.split("[", 1)[1].startswith(("premise", "hypothesis")), line


@pytest.mark.large
def test_a_saved_model_version_checks_its_files_before_it_is_loaded(runs, tmp_path, capsys):
    """Every file of a version is in its manifest (`assets.extra/manifest.json`): the vocabulary asset with two
    words swapped, the variables cut short or missing, zoo.json changed, the manifest itself missing: each is
    refused in one line naming the file, before TensorFlow reads anything (no OpError, no IndexError);
    `predict.py --check` says the intact version is whole (what TF Serving, which reads no manifest, needs)."""
    import predict as predict_script

    version = runs["saved"] / "1"
    manifest = json.loads((version / "assets.extra" / "manifest.json").read_text())["files"]
    assert {"saved_model.pb", "assets/vocab.txt", "assets.extra/zoo.json"} <= set(manifest)
    assert any(name.startswith("variables/") for name in manifest)
    predict_script.main(["--saved-model", str(version), "--check"])
    assert "its files match the SHA-256 its assets.extra/manifest.json records" in capsys.readouterr().out

    def damaged(name, change):
        copy = shutil.copytree(version, tmp_path / name.replace("/", "_") / "1")
        change(copy / name)
        with pytest.raises(ValueError) as error:
            open_predictor(str(copy))
        message = str(error.value)
        assert "\n" not in message and name.split("/")[-1] in message and "export the run again" in message
        return message

    def swap_two_words(path):
        words = path.read_text(encoding="utf-8").split("\n")
        words[10], words[11] = words[11], words[10]
        path.write_text("\n".join(words), encoding="utf-8")

    assert "does not match its SHA-256" in damaged("assets/vocab.txt", swap_two_words)
    data = next(name for name in manifest if name.startswith("variables/variables.data"))
    damaged(data, lambda path: path.write_bytes(path.read_bytes()[:-100]))
    assert "is missing" in damaged("variables/variables.index", os.remove)
    damaged("assets.extra/zoo.json", lambda path: path.write_text(path.read_text().replace("entailment", "neutral")))
    assert "manifest.json is missing" in damaged("assets.extra/manifest.json", os.remove)
    # the remedy: export the run again, a new version, which the folder's readers take (the latest)
    model_dir = tmp_path / "assets.extra_manifest.json"
    assert export_saved_model(runs["a"], str(model_dir), serving_files=False) == str(model_dir / "2")
    assert which(probabilities(str(model_dir)), runs["expected"]) == "a"
