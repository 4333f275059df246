"""`nli-zoo demo`: the Gradio page driven through Gradio's own client (`gradio_client`), as a browser would.

Two pages are served on free loopback ports for the module: a run of Rocktäschel et al.'s word-by-word
model beside a preset of ESIM (two-way co-attention), and the syntactic tree-LSTM (reads parses) beside
Wang & Jiang's match-LSTM (NULL column). The runs are untrained (tests/support/runs.py, make_run), so the
checks compare the page with the models' own predictions, not with gold labels.
"""

import html
import socket
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("gradio")
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from tests.support.exports import PAIRS  # noqa: E402
from tests.support.runs import finished_run, make_run, subprocess_env  # noqa: E402
from zoo.commands import demo as demo_command  # noqa: E402
from zoo.demo.app import MAX_WORDS, build_app, launch, shipped_examples  # noqa: E402
from zoo.demo.display import heatmaps  # noqa: E402
from zoo.demo.models import open_model  # noqa: E402
from zoo.presets.run_export import export_preset  # noqa: E402
from zoo.runs import load_run  # noqa: E402

PREMISE, HYPOTHESIS, PREMISE_PARSE, HYPOTHESIS_PARSE = PAIRS[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo_runs")
    runs = {name: make_run(str(root / name), name) for name in ("rocktaschel_wbw", "syntactic_tree_lstm", "mlstm")}
    runs["esim"] = finished_run(str(root / "esim"), "esim")  # a preset is exported from a finished run
    return runs


@pytest.fixture(scope="module")
def esim_preset(runs, tmp_path_factory):
    return export_preset(runs["esim"], str(tmp_path_factory.mktemp("demo_presets") / "esim"))


def serve(sources):
    app = build_app([open_model(source) for source in sources])
    url = launch(app, port=free_port())
    assert url.startswith("http://127.0.0.1:")
    return app, Client(url, verbose=False)


@pytest.fixture(scope="module")
def pair_page(runs, esim_preset):
    app, client = serve([runs["rocktaschel_wbw"], esim_preset])
    yield client
    app.close()


@pytest.fixture(scope="module")
def tree_page(runs):
    app, client = serve([runs["syntactic_tree_lstm"], runs["mlstm"]])
    yield client
    app.close()


def ask(client, premise, hypothesis, premise_parse="", hypothesis_parse=""):
    """The page's outputs, per model: `(label output, [(heatmap file, caption), ...], trees text)` (a model's
    outputs start at its label component)."""
    outputs = client.predict(premise, hypothesis, premise_parse, hypothesis_parse, api_name="/predict")
    returns = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/predict"]["returns"]
    assert len(outputs) == len(returns)
    models = []
    for value, info in zip(outputs, returns):
        if info["component"] == "Label":
            models.append([value, [], None])
        elif info["component"] == "Image":
            models[-1][1].append((value, info["label"]))
        else:
            models[-1][2] = value
    return models


def check_label(label_output, prediction):
    assert label_output["label"] == prediction["label"]
    shown = {c["label"]: c["confidence"] for c in label_output["confidences"]}
    assert set(shown) == set(prediction["probabilities"])
    np.testing.assert_allclose([shown[k] for k in prediction["probabilities"]],
                               list(prediction["probabilities"].values()), atol=1e-5)


def check_heatmaps(heatmaps, count, words):
    """`count` heatmap images, wide enough to have one column per word; returns their captions."""
    assert len(heatmaps) == count
    for path, _ in heatmaps:
        with Image.open(path) as image:
            assert image.width > 20 * words and image.height > 100
            assert len(set(np.asarray(image.convert("L")).ravel().tolist())) > 20  # a picture, not a blank
    return [caption for _, caption in heatmaps]


@pytest.mark.large
def test_two_models_side_by_side_show_their_own_predictions_and_maps(pair_page, runs):
    (wbw_label, wbw_maps, wbw_trees), (esim_label, esim_maps, esim_trees) = ask(pair_page, PREMISE, HYPOTHESIS)
    check_label(wbw_label, load_run(runs["rocktaschel_wbw"]).predict([(PREMISE, HYPOTHESIS)])[0])
    check_label(esim_label, load_run(runs["esim"]).predict([(PREMISE, HYPOTHESIS)])[0])  # the preset's = the run's
    words = len(PREMISE.split())
    assert check_heatmaps(wbw_maps, 1, words)[0].startswith("hypothesis → premise")
    captions = check_heatmaps(esim_maps, 2, words)  # ESIM's co-attention both ways
    assert captions[0].startswith("hypothesis → premise") and captions[1].startswith("premise → hypothesis")
    assert wbw_trees == "" and esim_trees == ""


@pytest.mark.large
def test_a_shipped_example_is_shown_whole_and_predicts_when_clicked(pair_page, runs):
    shipped = shipped_examples()
    outputs = pair_page.predict(2, api_name="/example")  # what a click on the third example card sends
    premise, hypothesis = outputs[:2]
    assert [premise, hypothesis] == shipped[2][:2] and len(premise) > 60  # Gradio's own table cuts at 60
    check_label(outputs[2], load_run(runs["rocktaschel_wbw"]).predict([(premise, hypothesis)])[0])
    components = pair_page.config["components"]
    [cards] = [c["props"]["samples"] for c in components if c["type"] == "dataset"]
    assert html.escape(premise) in cards[2][0] and html.escape(hypothesis) in cards[2][0]
    # the preset's run scored 0.406 on 32 test pairs: shown beside its name, with a line saying it is near chance
    texts = [str(c["props"].get("value")) for c in components if c["type"] == "markdown"]
    [esim] = [t for t in texts if "test accuracy 0.406 on 32 pairs of snli_sample" in t]
    assert "near chance" in esim and "SNLI" in esim


@pytest.mark.large
def test_tree_model_reads_the_typed_parse_and_shows_its_tree(tree_page, runs):
    (tree_label, tree_maps, trees), (mlstm_label, mlstm_maps, mlstm_trees) = ask(
        tree_page, PREMISE, HYPOTHESIS, PREMISE_PARSE, "")
    pair = (PREMISE, HYPOTHESIS, PREMISE_PARSE, "")
    check_label(tree_label, load_run(runs["syntactic_tree_lstm"]).predict([pair])[0])
    check_label(mlstm_label, load_run(runs["mlstm"]).predict([pair])[0])
    premise_tree, hypothesis_tree = trees.split("\n\n")
    # The parse's tree: "a guitar" and "on stage" are phrases joined under "playing ...".
    assert premise_tree.splitlines()[0] == "premise (your parse):"
    assert "│        │  ├─ a\n   │        │  └─ guitar" in premise_tree
    assert hypothesis_tree.startswith("hypothesis (complete binary tree over the tokens):")
    check_heatmaps(tree_maps, 2, len(PREMISE.split()))
    assert "NULL" in check_heatmaps(mlstm_maps, 1, len(PREMISE.split()))[0]
    assert mlstm_trees == ""


@pytest.mark.large
@pytest.mark.parametrize("premise, hypothesis, premise_parse, message", [
    ("", HYPOTHESIS, "", "The premise is empty"),
    (PREMISE, "   ", "", "The hypothesis is empty"),
    (" ".join(["word"] * 2000), HYPOTHESIS, "", f"The premise has 2,000 words; the demo takes sentences of at "
                                                  f"most {MAX_WORDS} words"),
    (PREMISE, HYPOTHESIS, "( ( A man ) ( plays", "Malformed binary parse: parse (premise): unbalanced brackets"),
    (PREMISE, HYPOTHESIS, "( ( A woman ) sings )", "syntactic_tree_lstm: "),  # leaves that are not the tokens
])
def test_bad_input_gets_a_message_on_the_page(tree_page, premise, hypothesis, premise_parse, message):
    with pytest.raises(AppError) as caught:
        ask(tree_page, premise, hypothesis, premise_parse, "")
    assert str(caught.value).startswith(message)
    assert "Traceback" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.large
def test_without_gradio_one_line_says_how_to_install(monkeypatch, capsys, runs):
    monkeypatch.setitem(sys.modules, "gradio", None)  # `import gradio` fails, find_spec finds nothing
    with pytest.raises(SystemExit) as exited:
        demo_command.main([runs["rocktaschel_wbw"]])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f'nli-zoo demo: error: {demo_command.INSTALL}\n'


@pytest.mark.parametrize("arguments, message", [
    (["no/such/run"], "'no/such/run' does not exist: give a run directory (train.py), a SavedModel or TF Serving "
                      "model folder, a TFLite export, or a preset (folder, hf://, kaggle://)"),
    (["a", "b", "c"], "give one or two models to compare, not 3"),
])
def test_command_line_errors_are_one_line(capsys, arguments, message):
    with pytest.raises(SystemExit) as exited:
        demo_command.main(arguments)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"nli-zoo demo: error: {message}\n"


@pytest.mark.parametrize("model_name, captions", [
    ("rocktaschel_attention_two_way", ["attention of the last hypothesis state over the premise (sums to 1)",
                                       "attention of the last premise state over the hypothesis (sums to 1)"]),
    ("hypothesis_only", []),  # no attention: the label alone
])
def test_one_row_and_absent_maps(tmp_path, model_name, captions):
    model = open_model(make_run(str(tmp_path / model_name), model_name))
    explanation = model.predictor.explain(PREMISE, HYPOTHESIS)
    drawn = heatmaps(explanation, model.name)
    assert [caption for _, caption in drawn] == captions
    assert all(image.height > 100 for image, _ in drawn)


def test_a_taken_port_is_one_line_before_any_model_loads(capsys, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            demo_command.main([str(tmp_path), "--port", str(port)])  # not a model: never opened
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"nli-zoo demo: error: port {port} of 127.0.0.1 is taken: " \
                                      "choose another with --port\n"


@pytest.mark.large
def test_the_page_says_when_a_run_is_unfinished_and_when_a_sentence_is_cut(runs, monkeypatch, capsys):
    """A run without results (training, or stopped) is named as such above its column and in the terminal,
    with the epoch of the weights shown; a sentence beyond the model's maximum length is said cut, as the
    commands count it (a toast on the page, a line in the terminal)."""
    from zoo.demo import app as demo_app

    model = open_model(runs["rocktaschel_wbw"])
    assert "is unfinished: it stopped before its results" in model.note and "0 of" in model.note
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from zoo.fileio import DirectoryLock; "
                               "held = DirectoryLock(sys.argv[1]).acquire(); print('held', flush=True); "
                               "time.sleep(120)", runs["rocktaschel_wbw"]],
                              stdout=subprocess.PIPE, text=True, env=subprocess_env())
    try:  # another process trains it now (this process's own lock is never another writer)
        assert holder.stdout.readline().strip() == "held"
        assert f"is being trained (PID {holder.pid}" in open_model(runs["rocktaschel_wbw"]).note
    finally:
        holder.kill()
        holder.wait()
    assert open_model(runs["esim"]).note is None  # finished
    toasts = []
    monkeypatch.setattr(demo_app.gr, "Warning", toasts.append)
    demo = demo_app.Demo([model])
    capsys.readouterr()
    demo.predict(" ".join(["word"] * 150), HYPOTHESIS)
    assert toasts == [f"{model.name}: of 1 pairs, 1 premise(s) cut to their first 100 tokens"]
    assert "cut to their first" in capsys.readouterr().err


def test_ctrl_c_closes_the_server_and_exits_130_with_the_one_line(monkeypatch, capsys, tmp_path):
    """Gradio's own wait prints its words and returns, so the command exited 0: the demo waits itself."""
    class App:
        is_running, closed = True, False

        def close(self):
            self.closed = True

    def ctrl_c(seconds):
        raise KeyboardInterrupt

    app = App()
    monkeypatch.setattr(demo_command, "demo", lambda args: demo_command.serve_until_interrupted(app))
    monkeypatch.setattr(demo_command.time, "sleep", ctrl_c)
    with pytest.raises(SystemExit) as stopped:
        demo_command.main([str(tmp_path)])
    assert stopped.value.code == 130 and app.closed
    out = capsys.readouterr()
    assert out.err == "nli-zoo demo: interrupted: the demo stopped\n" and "Keyboard interruption" not in out.out


def test_quiet_keeps_the_pages_address_and_the_models_warnings(monkeypatch, capsys):
    """`--quiet`: the address the demo exists to give and a model's warning (an unfinished run) are kept."""
    from types import SimpleNamespace

    from zoo.demo import app as demo_app

    app = SimpleNamespace(is_running=False, close=lambda: None)
    monkeypatch.setattr(demo_command, "open_models",
                        lambda sources: [SimpleNamespace(name="esim", note="runs/esim is unfinished")])
    monkeypatch.setattr(demo_app, "build_app", lambda models: app)
    monkeypatch.setattr(demo_app, "launch", lambda app, port=None: "http://127.0.0.1:7860/")
    demo_command.main(["hf://owner/esim", "--quiet"])
    assert capsys.readouterr().out == ("[demo] runs/esim is unfinished\n"
                                       "serving esim on http://127.0.0.1:7860/ (Ctrl+C stops)\n")
