"""predict.py: one pair, JSON lines in and out (run directory and SavedModel agree with
`zoo.load(run_dir).predict`), a malformed line names FILE:LINE, the attention heatmap and PNG.

The real command line runs in a subprocess for one pair (its output) and for a usage error (exit status 2);
the other cases call predict.py's `main` in this process (the same code after the start-up: no TensorFlow
start of its own), reading its exit status from `SystemExit`."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zoo
from tests.support.exports import PAIRS
from tests.support.runs import make_run
from zoo.export import export_saved_model

ROOT = Path(__file__).resolve().parent.parent
MODEL = "rocktaschel_wbw_two_way"  # attention both ways


def run_and_saved_model(root, model):
    """A tiny untrained run of `model` under `root` and its SavedModel."""
    run_dir = make_run(root / "run", model)
    saved_model = export_saved_model(zoo.load(run_dir), str(root / "models" / model))
    return {"root": root, "run_dir": run_dir, "saved_model": saved_model}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return run_and_saved_model(tmp_path_factory.mktemp("predict"), MODEL)


def predict_cli(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, str(ROOT / "predict.py"), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=300)


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def predict_main(capsys):
    """`predict_main(*args)`: predict.py's `main(args)` in this process, as a `Result` like `predict_cli`'s."""
    import predict

    def run(*args):
        capsys.readouterr()
        try:
            predict.main([str(a) for a in args])
            code = 0
        except SystemExit as stop:
            code = stop.code
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.mark.large
def test_single_pair(setup):
    premise, hypothesis = PAIRS[0][:2]
    result = predict_cli("--run-dir", setup["run_dir"], "--premise", premise, "--hypothesis", hypothesis)
    assert result.returncode == 0, result.stderr[-2000:]
    expected = zoo.load(setup["run_dir"]).predict([PAIRS[0]])[0]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"label: {expected['label']}"
    for line, (name, p) in zip(lines[1:], expected["probabilities"].items()):
        assert line.split() == [name, f"{p:.4f}"]


@pytest.mark.large
def test_jsonl_in_and_out_with_the_saved_model(setup, predict_main):
    path = setup["root"] / "pairs.jsonl"
    path.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "id": i}) + "\n"
                            for i, (p, h, *_) in enumerate(PAIRS)) + "\n", encoding="utf-8")
    out = setup["root"] / "predictions.jsonl"
    result = predict_main("--saved-model", Path(setup["saved_model"]).parent, "--input", path, "--output", out)
    assert result.returncode == 0, result.stderr[-2000:]
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    expected = zoo.load(setup["run_dir"]).predict(PAIRS)
    assert [g["label"] for g in got] == [e["label"] for e in expected]
    for g, e in zip(got, expected):
        assert list(g["probabilities"]) == list(e["probabilities"]) == list(zoo.data.LABELS)
        assert g["probabilities"] == pytest.approx(e["probabilities"], abs=1e-5)


@pytest.mark.large
@pytest.mark.parametrize("line, message", [
    ('{"premise": "A man."', "not valid JSON"),
    ('{"premise": "A man.", "hypothesis": 3}', 'string fields "premise" and "hypothesis"'),
    ('["A man.", "A woman."]', 'string fields "premise" and "hypothesis"'),
])
def test_malformed_jsonl_names_file_and_line(setup, predict_main, line, message):
    path = setup["root"] / "bad.jsonl"
    path.write_text(json.dumps({"premise": "A dog.", "hypothesis": "An animal."}) + "\n\n" + line + "\n",
                    encoding="utf-8")
    result = predict_main("--run-dir", setup["run_dir"], "--input", path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(f"predict.py: error: {path}:3: ")
    assert message in result.stderr and "Traceback" not in result.stderr


def test_usage_errors_are_one_line(tmp_path):
    result = predict_cli("--run-dir", tmp_path, "--premise", "A man.")
    assert result.returncode == 2
    assert result.stderr.strip() == "predict.py: error: --premise and --hypothesis go together"


@pytest.mark.large
def test_show_attention_and_png(setup, predict_main):
    png = setup["root"] / "alignment.png"
    premise, hypothesis = "A man plays a guitar.", "A person plays music."
    result = predict_main("--saved-model", setup["saved_model"], "--premise", premise, "--hypothesis", hypothesis,
                          "--show-attention", "--attention-png", png)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "attention (rows: hypothesis, columns: premise" in out
    assert "attention_reverse (rows: premise, columns: hypothesis" in out
    assert "columns: 0=A  1=man  2=plays  3=a  4=guitar  5=." in out
    rows = [line for line in out.splitlines() if " |" in line]
    assert [r.split(" |")[0].strip() for r in rows[:5]] == ["A", "person", "plays", "music", "."]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"[predict] wrote {png}\n" in result.stderr  # every message on stderr: stdout is the answer
    # --quiet: the same answer, and no note
    quiet = predict_main("--saved-model", setup["saved_model"], "--premise", premise, "--hypothesis", hypothesis,
                         "--show-attention", "--attention-png", png, "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == out and "[predict]" not in quiet.stderr


# A syntactic tree model: parses in the JSON lines and on the command line ---------------------------
TREE_MODEL = "syntactic_tree_lstm"


@pytest.fixture(scope="module")
def tree_setup(tmp_path_factory):
    return run_and_saved_model(tmp_path_factory.mktemp("predict_tree"), TREE_MODEL)


@pytest.mark.large
def test_parses_in_jsonl_reach_the_tree_model(tree_setup, predict_main):
    fields = ("premise", "hypothesis", "premise_binary_parse", "hypothesis_binary_parse")
    path = tree_setup["root"] / "pairs.jsonl"
    path.write_text("".join(json.dumps(dict(zip(fields, pair))) + "\n" for pair in PAIRS), encoding="utf-8")
    expected = zoo.load(tree_setup["run_dir"]).predict(PAIRS)
    without_parses = zoo.load(tree_setup["run_dir"]).predict([pair[:2] for pair in PAIRS])
    assert any(e["probabilities"] != w["probabilities"] for e, w in zip(expected, without_parses))
    for model in (["--run-dir", tree_setup["run_dir"]], ["--saved-model", tree_setup["saved_model"]]):
        result = predict_main(*model, "--input", path)
        assert result.returncode == 0, result.stderr[-2000:]
        got = [json.loads(line) for line in result.stdout.splitlines()]
        for g, e in zip(got, expected):
            assert g["probabilities"] == pytest.approx(e["probabilities"], abs=1e-5)


@pytest.mark.large
@pytest.mark.parametrize("model_flag", ["--run-dir", "--saved-model"])
def test_bad_parses_are_reported(tree_setup, predict_main, model_flag):
    model = tree_setup["run_dir"] if model_flag == "--run-dir" else tree_setup["saved_model"]
    path = tree_setup["root"] / f"bad{model_flag}.jsonl"
    path.write_text(json.dumps({"premise": "A man.", "hypothesis": "A man."}) + "\n"
                    + json.dumps({"premise": "A man.", "hypothesis": "A man.", "premise_binary_parse": "( ( A man ) ."})
                    + "\n", encoding="utf-8")
    result = predict_main(model_flag, model, "--input", path)
    assert result.returncode == 2 and f"{path}:2: " in result.stderr and "unbalanced brackets" in result.stderr
    # well formed, but its leaves are not the tokens: named by the model (pair index / request row)
    result = predict_main(model_flag, model, "--premise", "A man sleeps.", "--hypothesis", "A man.",
                          "--premise-parse", "( ( A woman ) sleeps )")
    assert result.returncode == 2 and "do not match" in result.stderr, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("predict.py: error: ") and "Traceback" not in result.stderr


@pytest.mark.large
def test_tree_attention_over_nodes(tree_setup, predict_main):
    premise, hypothesis, premise_parse, hypothesis_parse = PAIRS[0]
    result = predict_main("--saved-model", tree_setup["saved_model"], "--premise", premise, "--hypothesis",
                          hypothesis, "--premise-parse", premise_parse, "--hypothesis-parse", hypothesis_parse,
                          "--show-attention")
    assert result.returncode == 0, result.stderr[-2000:]
    columns = result.stdout.split("\ncolumns: ")[1].splitlines()[0].split("  ")
    assert columns[:3] == ["0=A", "1=•", "2=man"] and len(columns) == 2 * 9 - 1   # 9 tokens, 17 nodes


@pytest.mark.large
def test_tflite_export_predicts_and_explains(setup, predict_main):
    """`predict.py --tflite`: the pair's label and probabilities as the run gives them, and its alignment."""
    from zoo.export.tflite import export_tflite

    path = export_tflite(zoo.load(setup["run_dir"]), str(setup["root"] / "tflite"))
    premise, hypothesis = "A man plays a guitar.", "A person plays music."
    result = predict_main("--tflite", path, "--premise", premise, "--hypothesis", hypothesis, "--show-attention",
                          "--num-threads", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    expected = zoo.load(setup["run_dir"]).predict([(premise, hypothesis)])[0]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"label: {expected['label']}"
    for line, (name, p) in zip(lines[1:4], expected["probabilities"].items()):
        assert line.split()[0] == name and float(line.split()[1]) == pytest.approx(p, abs=2e-4)
    assert "columns: 0=A  1=man  2=plays  3=a  4=guitar  5=." in result.stdout
    assert "attention_reverse (rows: premise, columns: hypothesis" in result.stdout


@pytest.mark.large
def test_num_threads_goes_with_tflite(setup, capsys):
    import predict

    with pytest.raises(SystemExit) as stop:
        predict.main(["--saved-model", setup["saved_model"], "--premise", "A.", "--hypothesis", "B.",
                      "--num-threads", "2"])
    assert stop.value.code == 2 and "--num-threads goes with --tflite" in capsys.readouterr().err


@pytest.mark.large
def test_text_that_is_not_utf8_is_named_by_line_or_option(setup, tmp_path, capsys):
    from zoo.commands import predict as predict_command

    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps({"premise": "A dog.", "hypothesis": "An animal."}).encode() + b"\n\n"
                     + '{"premise": "Un caf\u00e9.", "hypothesis": "A drink."}\n'.encode("latin-1"))
    for argv, expected in ((["--input", str(path)], f"predict.py: error: {path}:3: not UTF-8 text"),
                           (["--premise", "A caf\udce9.", "--hypothesis", "A drink."],
                            "predict.py: error: --premise is not UTF-8 text")):
        with pytest.raises(SystemExit) as exit_:
            predict_command.main(["--run-dir", str(setup["run_dir"]), *argv])
        errors = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == 2 and len(errors) == 1 and errors[0].startswith(expected), errors


@pytest.mark.large
def test_cut_and_empty_sentences_are_counted(setup, tmp_path, capsys):
    from zoo.commands import predict as predict_command

    limit = json.loads((Path(setup["run_dir"]) / "config.json").read_text())["preset"]["data"]["max_premise_length"]
    path = tmp_path / "edge.jsonl"
    path.write_text("".join(json.dumps({"premise": p, "hypothesis": h}) + "\n" for p, h in (
        (" ".join(["a"] * (limit + 1)), "A text."), ("A dog.", ""), ("A man.", "A person."))))
    predictions = predict_command.main(["--run-dir", str(setup["run_dir"]), "--input", str(path), "--output",
                                        str(tmp_path / "out.jsonl")])
    assert len(predictions.predictions) == 3 and len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
    assert predictions.output == str(tmp_path / "out.jsonl") and predictions.length_notes["premises_cut"] == 1
    err = capsys.readouterr().err
    assert f"[predict] {path}: of 3 pairs, 1 premise(s) cut to their first {limit} tokens, 1 empty hypothesis(s)" in err
