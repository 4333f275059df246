"""The first ten minutes (issue 34): answers before TensorFlow starts, a terminal without TensorFlow's
notices, a first result that explains itself.

- The registry's names and presets come from the model files' source (`zoo.catalog`) and equal what the
  imported files register; `nli-zoo models`, every `--help` and the usual typos never import TensorFlow or
  Keras (one subprocess).
- `zoo.quiet`'s filter drops exactly TensorFlow's, CUDA's and LiteRT's notices and passes everything else as
  it arrives; a script loading a run with `zoo.load`, then train, evaluate (the run's own data by default),
  predict, export, models and compare, run as one command-line process, print none of them (one subprocess).
- A near-chance accuracy and near-uniform attention are said in one line; the text heatmap is shaded over
  the map's own range; an `Explanation` reads as what it holds.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.runs import ONE_SHAPE, tiny_args
from zoo import quiet
from zoo.catalog import read_catalog
from zoo.runs.alignment import near_uniform, text_heatmap
from zoo.runs.evaluation import chance_note, near_chance, say_if_near_chance
from zoo.runs.predictor import Explanation

ROOT = Path(__file__).resolve().parent.parent
NOISE = re.compile(r"^(E0000|W0000|I0000|INFO:|WARNING:absl|WARNING: All log messages)")


def python(script, cwd, timeout=600):
    """Runs `python -c script` as a user would (no log level set), with this checkout's zoo."""
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel", "TF_CONFIG")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_the_catalog_read_from_source_is_the_registry_the_model_files_fill():
    import zoo.models  # noqa: F401 (registers every model file)
    from zoo.registry import _REGISTRY

    entries, unreadable = read_catalog()
    assert unreadable == [] and set(entries) == set(_REGISTRY)
    for name, entry in entries.items():
        spec = _REGISTRY[name]
        assert entry.class_name == spec.model_class.__name__ and entry.module == spec.model_class.__module__
        from zoo.registry import _catalog

        read = _catalog()[name]
        assert (read.preset, read.paper, read.paper_params, read.attention) == \
            (spec.preset, spec.paper, spec.paper_params, spec.attention), name


def test_a_registration_the_reader_cannot_follow_makes_the_file_unreadable(tmp_path):
    (tmp_path / "good.py").write_text('from zoo.models.other import SIZE\nTRAIN = {"batch_size": 8}\n'
                                      'def _preset(h):\n    """doc"""\n    return {"hidden_size": h, "x": -SIZE}\n'
                                      '@register_model("good", model=_preset(5), train={**TRAIN, "epochs": 2})\n'
                                      'class Good:\n    pass\n')
    (tmp_path / "other.py").write_text("SIZE = 3\n")
    (tmp_path / "computed.py").write_text('@register_model("computed", model={"h": len("abc")})\nclass C:\n    pass\n')
    (tmp_path / "looped.py").write_text('for n in ("a", "b"):\n    register_model(n)(object)\n')
    entries, unreadable = read_catalog(str(tmp_path))
    assert entries["good"].arguments == {"model": {"hidden_size": 5, "x": -3}, "train": {"batch_size": 8, "epochs": 2}}
    assert set(entries) == {"good"} and len(unreadable) == 2
    assert any("zoo.models.computed line 1" in u for u in unreadable)
    assert any("outside a class decorator" in u for u in unreadable)


ANSWERED_WITHOUT_TENSORFLOW = """
import contextlib, io, sys
from zoo.commands import COMMANDS, main

def answer(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as stop:
            return stop.code, out.getvalue() + err.getvalue()
    return 0, out.getvalue() + err.getvalue()

checked = [["models"], ["models", "esim"], ["train", "--model", "nosuch"],
           ["train", "--model", "esim", "--set", "hiden_size=8"], ["train", "--model", "esim", "--batch-size", "0"],
           ["train", "--model", "esim", "--dataset", "nosuch"], ["evaluate", "--run-dir", "."],
           ["predict", "--run-dir", ".", "--premise", "a", "--hypothesis", "b"], ["export", "--run-dir", "."],
           ["sweep", "--models", "nosuch", "--dir", "S"]] + [[name, "--help"] for name in COMMANDS]
for argv in checked:
    code, text = answer(argv)
    assert "tensorflow" not in sys.modules and "keras" not in sys.modules, (argv, text)
    print(code, " ".join(argv), "|", text.strip().splitlines()[-1] if text.strip() else "")
"""


def test_names_help_and_usage_errors_answer_without_tensorflow(tmp_path):
    result = python(ANSWERED_WITHOUT_TENSORFLOW, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = {line.split(" |")[0]: line for line in result.stdout.splitlines()}
    assert answers["0 models"].count("|θ|_M") == 1 and answers["0 models esim"].startswith("0 models esim |")
    assert "unknown model 'nosuch'" in answers["2 train --model nosuch"]
    assert "unknown setting 'hiden_size'" in answers["2 train --model esim --set hiden_size=8"]
    assert "--dataset: unknown data set" in answers["2 train --model esim --dataset nosuch"]
    assert "--run-dir .: is not a run directory" in answers["2 evaluate --run-dir ."]
    assert "--run-dir .: is not a run directory" in answers["2 export --run-dir ."]
    assert "unknown model 'nosuch'" in answers["2 sweep --models nosuch --dir S"]


def run_pump(chunks, gpu=False):
    """What `zoo.quiet`'s filter writes for the chunks written to it, one read each."""
    noise, state = quiet.noise_pattern(gpu=gpu), {"held": b"", "passing": False}
    reader, writer = os.pipe()
    out_reader, out_writer = os.pipe()
    written = []
    for chunk in chunks:
        os.write(writer, chunk)
        quiet._copy(reader, out_writer, noise, state)
        os.set_blocking(out_reader, False)
        try:
            written.append(os.read(out_reader, 65536))
        except BlockingIOError:
            written.append(b"")
    for fd in (reader, writer, out_reader, out_writer):
        os.close(fd)
    return written


CUINIT = (b"E0000 00:00:1795827621.652090   11466 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA "
          b"error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
DT_BOOL = (b"E0000 00:00:1795827621.935595   11466 util.cc:131] oneDNN supports DT_BOOL only on platforms with "
           b"AVX-512. Falling back to the default Eigen-based implementation if present.\n")


def test_the_filter_drops_the_notices_and_passes_the_rest_as_it_comes():
    startup = (b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
               b"I0000 00:00:1795827617.994266   11466 port.cc:153] oneDNN custom operations are on.\n"
               b"To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n")
    written = run_pump([startup + CUINIT + DT_BOOL + b"E0000 00:00:1.0   1 other.cc:1] a real error\n",
                        b"\rprogress 1", b"0%", b"\n", b"I0000 00:00:1.0   1 x.cc:9] hel", b"d back\n",
                        b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n"])
    assert written == [b"E0000 00:00:1.0   1 other.cc:1] a real error\n", b"\rprogress 1", b"0%", b"\n", b"", b"",
                       b""]
    assert run_pump([CUINIT], gpu=True) == [CUINIT]  # on a machine with a GPU it says the driver is broken


WRITERS_GONE = """
import os, sys, time
from zoo.quiet import _FILTER, filter_stderr
filter_stderr()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # descriptor 2 pointed elsewhere: the filter's pipe has no writer
time.sleep(1.5)
with open(f"/proc/{_FILTER['pid']}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
print("FILTER_CPU", (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads the filter's CPU time from /proc")
def test_the_filter_waits_without_spinning_once_its_writers_are_gone():
    """A process whose descriptor 2 goes elsewhere while it lives (pytest's capture does it around a test that
    runs a command in-process) leaves the filter a pipe without writers: it waits for the end, not at full
    speed on a core (it did, and slowed the suite)."""
    done = subprocess.run([sys.executable, "-c", WRITERS_GONE], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    seconds = [float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("FILTER_CPU")]
    assert done.returncode == 0 and seconds, done.stderr[-2000:]
    assert seconds[0] < 0.3, f"the filter used {seconds[0]} s of CPU in 1.5 s without a writer"


COMMANDS_RUN = """
import json, sys
import zoo
print(zoo.load(FINISHED).predict([("A man plays a guitar.", "A man sleeps.")]))  # the library, before any filter
from zoo.commands import run
run("train", json.loads(sys.argv[1]))
run("evaluate", ["--run-dir", "R", "--quiet"])
run("predict", ["--run-dir", "R", "--premise", "A man plays a guitar.", "--hypothesis", "A man sleeps.",
                "--show-attention"])
run("export", ["--run-dir", "R", "--format", "tflite", "--out", "T", "--no-accuracy-check"])
run("predict", ["--tflite", "T", "--premise", "A man plays a guitar.", "--hypothesis", "A man sleeps."])
run("models", [])
run("compare", ["R", "--resamples", "100"])
"""


@pytest.mark.large
def test_the_library_and_the_commands_print_no_start_up_lines_and_a_first_result_explains_itself(
        tmp_path, finished_run_dir):
    train = tiny_args("R", *ONE_SHAPE, "--epochs", "1", "--attention-examples", "0")
    script = COMMANDS_RUN.replace("sys.argv[1]", repr(json.dumps(train))).replace("FINISHED", repr(finished_run_dir))
    result = python(script, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line for line in result.stderr.splitlines() if NOISE.match(line)] == []
    assert "XLA" not in result.stdout  # the GPU-only notice of training, on a machine without one
    # evaluate --quiet on the run's own data by default: its scores and no note (which data, where written),
    # as train --quiet; its accuracy near chance (a warning) said once per command that scores it
    assert re.search(r"^\S+ on snli_sample \[test\]:$", result.stdout, flags=re.M)
    assert "[evaluate] no --dataset" not in result.stdout and "[evaluate] written to" not in result.stdout
    notes = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("[note] accuracy")]
    accuracy = json.loads((tmp_path / "R" / "results.json").read_text())["test_accuracy"]
    assert len(notes) == (3 if near_chance(accuracy) else 0)  # train, evaluate, predict from the run
    assert all("SNLI" in note for note in notes)
    assert "shades:" in result.stdout or "every weight is" in result.stdout


def test_near_chance_and_near_uniform_are_said_in_one_line():
    assert chance_note({"test": 0.52}) == ""
    note = chance_note({"test": 0.375, "dev": 0.411, "other": 0.9})
    assert note.startswith("accuracy near chance (test 0.375, dev 0.411; chance is 0.333)") and "\n" not in note
    assert say_if_near_chance({"test": 0.375}) == chance_note({"test": 0.375})  # said by the `[note]` logger
    assert near_uniform(np.full((3, 6), 1 / 6)) and near_uniform([[0.19, 0.17, 0.16, 0.16, 0.16, 0.16]])
    assert not near_uniform([[0.9, 0.05, 0.05]]) and not near_uniform([[1.0]])


def test_the_text_heatmap_is_shaded_over_the_maps_own_range():
    weights = np.array([[0.21, 0.18, 0.16], [0.17, 0.17, 0.16]])  # near uniform: an absolute scale draws blanks
    lines = text_heatmap(weights, ["A", "man", "."], ["A", "dog"]).splitlines()
    assert lines[2] == "   A |██▒▒  |  -> A 0.21" and lines[3] == " dog |░░░░  |  -> A 0.17"
    assert lines[-1] == "shades: ' ' = 0.160 to '█' = 0.210 (this map's range)"
    assert text_heatmap(np.full((1, 2), 0.5), ["a", "b"], ["x"]).splitlines()[-1] == "every weight is 0.500"


def test_an_explanation_reads_as_what_it_holds():
    explanation = Explanation(["A", "man"], ["A", "dog"], "neutral", {"entailment": 0.2, "neutral": 0.7,
                                                                      "contradiction": 0.1},
                              {"attention": np.full((2, 3), 1 / 3)}, null_column=True)
    assert repr(explanation) == ("Explanation(neutral 0.70; premise 'A man'; hypothesis 'A dog'; maps: attention "
                                 "2x3; column 0 of attention is NULL)")


THREAD_LAYOUT = """
import json, os
from zoo.quiet import describe_thread_layout, import_tensorflow
import_tensorflow()
import tensorflow as tf
print(json.dumps([tf.config.threading.get_intra_op_parallelism_threads(), len(os.sched_getaffinity(0)),
                  describe_thread_layout(tf)]))
"""


@pytest.mark.large
@pytest.mark.parametrize("asked", [None, "2"])
def test_tensorflow_gets_half_the_cores_per_op_unless_the_user_chose(asked):
    """`zoo.quiet.apply_thread_layout`: on a CPU the intra-op pool is half the cores (independent loops run side by
    side on the inter-op pool instead); `TF_NUM_INTRAOP_THREADS` wins."""
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
    if asked:
        env["TF_NUM_INTRAOP_THREADS"] = asked
    proc = subprocess.run([sys.executable, "-c", THREAD_LAYOUT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    intra, cores, line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert intra == (0 if asked else max(1, cores // 2))   # 0: TensorFlow reads the environment's value itself
    inter = os.environ.get("TF_NUM_INTEROP_THREADS") or cores
    assert line == f"{asked or max(1, cores // 2)} intra-op, {inter} inter-op"   # what the trainer prints
