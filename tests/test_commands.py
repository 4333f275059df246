"""The installed package: `nli-zoo COMMAND` dispatches to the same commands as the scripts, `import zoo`
works from any directory, and a trained run travels as a preset that predicts what `nli-zoo predict` says.

The README's set-up command installs the package editable (requirements-dev.txt: `-e .`), so the
`nli-zoo` console script exists wherever the tests run.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zoo import commands

ROOT = Path(__file__).resolve().parent.parent
PAIR = ("A man plays a guitar.", "A person makes music.")


def test_dispatch_lists_and_shows_presets(capsys):
    assert commands.main(["models", "rocktaschel_wbw*"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()]
    assert names == ["rocktaschel_wbw", "rocktaschel_wbw_two_way"]
    commands.main(["models", "esim"])
    shown = json.loads(capsys.readouterr().out)
    assert shown["class"] == "ESIM" and shown["preset"]["train"]["learning_rate"] == 4e-4


def test_unknown_command_and_unknown_model_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        commands.main(["trian"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown command 'trian'" in err[0] and "train" in err[0]
    with pytest.raises(SystemExit) as exit_:
        commands.main(["models", "no_such_model"])
    assert exit_.value.code == 2 and "no registered model matches" in capsys.readouterr().err


def test_help_names_every_command(capsys):
    assert commands.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in commands.COMMANDS)


def nli_zoo():
    path = shutil.which("nli-zoo", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    assert path, "the nli-zoo command is not installed: pip install -e . (requirements-dev.txt does it)"
    return path


def run(argv, cwd):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)  # the installed package, not the checkout on the path
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.large
def test_train_export_preset_and_predict_from_another_directory(tmp_path):
    """issue 15's "done means": nli-zoo from elsewhere, the preset predicts what `nli-zoo predict` prints."""
    cli = nli_zoo()
    run([cli, "train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none",
         "--embedding-dim", "8", "--set", "hidden_size=8", "--max-train-examples", "64", "--max-eval-examples", "32",
         "--batch-size", "16", "--epochs", "1", "--attention-examples", "0", "--keras-verbose", "0",
         "--set", "max_premise_length=14", "--set", "max_hypothesis_length=10", "--run-dir", "R"], tmp_path)
    run([cli, "export", "--run-dir", "R", "--format", "preset", "--out", "P"], tmp_path)
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"premise": PAIR[0], "hypothesis": PAIR[1]}) + "\n")
    printed = run([cli, "predict", "--run-dir", "R", "--input", "pairs.jsonl"], tmp_path)
    expected = json.loads(printed.strip().splitlines()[-1])
    script = ("import json, zoo; p = zoo.from_preset('P').predict([(%r, %r)])[0]; "
              "print(json.dumps([float(x) for x in p]))" % PAIR)
    probabilities = json.loads(run([sys.executable, "-c", script], tmp_path).strip().splitlines()[-1])
    assert probabilities == pytest.approx([expected["probabilities"][k] for k in ("entailment", "neutral",
                                                                                   "contradiction")], abs=1e-6)
    # bowman_lstm attends to nothing: --show-attention is refused before any prediction is printed
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    refused = subprocess.run([cli, "predict", "--run-dir", "R", "--premise", PAIR[0], "--hypothesis", PAIR[1],
                              "--show-attention"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().splitlines()[-1] == ("nli-zoo predict: error: this model has no attention to show "
                                                       "(--show-attention, --attention-png)")
