"""Export for serving: SavedModel (TF Serving layout, signatures, C++ loader via saved_model_cli, fresh
`tf.saved_model.load`), TFLite with the LiteRT interpreter, and the request payloads of docs/tf-serving.md.

The most demanding preset of every model class (`tests.support.models.EXPENSIVE`) and the documented model
are exported once (untrained, hidden size 8, 8-d vectors) by the module fixture, the xdist workers sharing
the work, and the checks reuse the exports; one fresh process loads them all. The pairs carry binary
parses, which the syntactic tree models read (in graph in the SavedModel, in Python for TFLite).
"""

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import export as export_script
import zoo
from tests.support.exports import EDGE_PAIRS, PAIRS, FreshLoader, build_exports, shared_dir, tree_models
from tests.support.models import expensive_models, model_classes
from tests.support.runs import make_run
from zoo.export import ExportError, export_saved_model, next_version
from zoo.export.saved_model import INPUT_NAMES, PARSE_INPUT_NAMES, SERVING_OUTPUTS
from zoo.export.serving import RequestError, grpc_predict, rest_predict
from zoo.export.tflite import TFLiteNLI, export_tflite
from zoo.export.version_files import read_metadata
from zoo.layers.loop_choice import DEFAULT_DESIGN
from zoo.layers.recurrent import BidirectionalLSTM
from zoo.layers.traversal import iter_layers

pytestmark = pytest.mark.large  # the whole file is the large tier

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "serving"
DOC_MODEL = "rocktaschel_wbw"        # the model of the documented requests
CLI_MODEL = "rocktaschel_wbw_two_way"  # attention both ways: checked through saved_model_cli
TOLERANCE_SAVED_MODEL = 1e-5
TOLERANCE_TFLITE = 1e-4
TFLITE_BATCH = 2  # smaller than the number of test pairs: exercises the padded last chunk
ALL_PAIRS = PAIRS + EDGE_PAIRS
MODELS = zoo.list_models()
# Exported: each model class's most demanding preset, and the model of the documented requests.
EXPORTED = [name for name in MODELS if name in {*expensive_models(), DOC_MODEL}]
SYNTACTIC_MODEL = "syntactic_tree_lstm"


def env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")


def keras_reference(run, pairs):
    """The Keras model's `explain()` outputs and the tokens it saw, as numpy arrays."""
    outputs = {k: np.asarray(v) for k, v in run.model.explain(run.encode(pairs)).items()}
    data = run.settings.data
    tokens = run.tokenizer.tokenize_batch([pair[0] for pair in pairs])
    outputs["premise_tokens"] = [t[:data.max_premise_length] for t in tokens]
    tokens = run.tokenizer.tokenize_batch([pair[1] for pair in pairs])
    outputs["hypothesis_tokens"] = [t[:data.max_hypothesis_length] for t in tokens]
    return outputs


def build_one(name, directory, loader, runs):
    """Writes a tiny run of `name`, the Keras reference outputs and the SavedModel (see `build_exports`), and
    hands the SavedModel to the fresh `loader` at once; the loaded run is kept in `runs` for its TFLite
    conversion (`load_many`)."""
    run = runs[name] = zoo.load(make_run(directory / "run", name))
    reference = keras_reference(run, ALL_PAIRS)
    np.savez(directory / "reference.npz", **{k: v for k, v in reference.items() if not k.endswith("_tokens")})
    manifest = {"run_dir": run.run_dir, "errors": {},
                "tokens": {k: v for k, v in reference.items() if k.endswith("_tokens")}}
    try:
        manifest["saved_model"] = export_saved_model(run, str(directory / "models" / name))
    except Exception as error:  # reported by the per-model tests
        manifest["errors"]["saved_model"] = f"{type(error).__name__}: {error}"
    else:
        loader.load(manifest["saved_model"], str(directory / "loaded.npz"))
    return manifest


def load_many(built, loader, runs):
    """Converts the SavedModels of `built` to TFLite while the fresh `loader` loads them, then waits for it."""
    manifests = {name: json.loads((d / "manifest.json").read_text(encoding="utf-8")) for name, d in built}
    try:
        for name, directory in built:
            try:  # from the run the SavedModel was exported from (exported as it was loaded: nothing trains)
                manifests[name]["tflite"] = export_tflite(runs[name], str(directory / "tflite"),
                                                          batch_size=TFLITE_BATCH)
            except Exception as error:
                manifests[name]["errors"]["tflite"] = f"{type(error).__name__}: {error}"
    finally:
        returncode, output = loader.finish()
        for name, directory in built:
            if returncode != 0:
                manifests[name]["errors"]["saved_model"] = "fresh process failed: " + output
            (directory / "manifest.json").write_text(json.dumps(manifests[name]), encoding="utf-8")
            (directory / "loaded.done").touch()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every model of `EXPORTED` exported once per test session (SavedModel and TFLite; the xdist workers
    share the work), with the Keras reference outputs and the outputs of a fresh `tf.saved_model.load`.

    Returns:
        `{name: {"run_dir", "saved_model", "tflite", "reference", "loaded", "errors", ...}}`.
    """
    root = shared_dir(tmp_path_factory, "export-models")
    loader, runs = FreshLoader(ALL_PAIRS, "loader.log", cwd=ROOT, env=env()), {}
    manifests = build_exports(root, EXPORTED, ALL_PAIRS, functools.partial(build_one, loader=loader, runs=runs),
                              functools.partial(load_many, loader=loader, runs=runs))
    for name, m in manifests.items():
        directory = Path(m["dir"])
        m["reference"] = dict(np.load(directory / "reference.npz"), **m["tokens"])
        if (directory / "loaded.npz").exists():
            m["loaded"] = dict(np.load(directory / "loaded.npz", allow_pickle=True))  # our own file
    return manifests


def entry_for(exported, name, kind):
    entry = exported[name]
    if kind in entry["errors"]:
        pytest.fail(f"{kind} export of {name} failed: {entry['errors'][kind]}")
    return entry


def load_run(exported, name):
    return zoo.load(exported[name]["run_dir"])


def own_run(exported, name, tmp_path):
    """A copy of the shared tiny run of `name` in `tmp_path`: an export holds its run's lock, and the xdist
    workers export the shared runs at the same time."""
    import shutil

    return zoo.load(shutil.copytree(exported[name]["run_dir"], tmp_path / f"run-{name}"))


# Which models -------------------------------------------------------------------------------------
def test_every_model_class_is_exported_and_syntactic_ones_take_parses(exported):
    assert len(MODELS) >= 21 and len(tree_models()) == 5, MODELS
    classes = model_classes()
    assert {cls for cls, names in classes.items() if set(names) & set(EXPORTED)} == set(classes), EXPORTED
    for name in EXPORTED:  # the signatures' inputs, as the fresh process loaded them
        loaded = entry_for(exported, name, "saved_model")["loaded"]
        expected = INPUT_NAMES + (PARSE_INPUT_NAMES if name in (SYNTACTIC_MODEL, "him") else ())  # not esim_tree
        for signature in ("serving_default", "explain"):
            assert loaded[f"{signature}:inputs"].tolist() == sorted(expected), (name, signature)


# SavedModel ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXPORTED)
def test_saved_model_layout(exported, name):
    entry = entry_for(exported, name, "saved_model")
    path = Path(entry["saved_model"])
    assert path.name == "1" and path.parent.name == name  # MODELS/NAME/1
    assert (path / "saved_model.pb").exists() and (path / "variables").is_dir()
    vocab = (Path(entry["run_dir"]) / "vocab.txt").read_text(encoding="utf-8")
    assert (path / "assets" / "vocab.txt").read_text(encoding="utf-8") == vocab
    metadata = json.loads((path / "assets.extra" / "zoo.json").read_text())
    assert metadata["model"] == name and metadata["labels"] == list(zoo.data.LABELS)
    # every weight is saved once (not also as the Keras variable that wraps it)
    saved = [n for n, _ in tf.train.list_variables(str(path / "variables" / "variables")) if n.endswith("VALUE")]
    assert len(saved) == len(load_run(exported, name).model.variables), saved


@pytest.mark.parametrize("name", EXPORTED)
def test_saved_model_equals_keras_in_a_fresh_process(exported, name):
    entry = entry_for(exported, name, "saved_model")
    loaded, reference = entry["loaded"], entry["reference"]
    for signature in ("serving_default", "explain"):
        np.testing.assert_allclose(loaded[f"{signature}/probabilities"], reference["probabilities"],
                                   atol=TOLERANCE_SAVED_MODEL, rtol=0)
        label_id = loaded[f"{signature}/label_id"]
        assert label_id.dtype == np.int32 and label_id.tolist() == reference["probabilities"].argmax(-1).tolist()
        assert [s.decode() for s in loaded[f"{signature}/label"]] == [zoo.data.LABELS[i] for i in label_id]
    assert sorted(k.split("/")[1] for k in loaded if k.startswith("serving_default/")) == sorted(SERVING_OUTPUTS)
    # explain: every map of the Keras model's explain(), and the tokens it saw
    for key, value in reference.items():
        if key.endswith("_tokens"):
            padded = loaded[f"explain/{key}"]
            assert [[t.decode() for t in row if t] for row in padded] == value, key
        else:
            assert loaded[f"explain/{key}"].shape == value.shape, key
            np.testing.assert_allclose(loaded[f"explain/{key}"], value, atol=TOLERANCE_SAVED_MODEL, rtol=0,
                                       err_msg=key)
    attention = loaded.get("explain/attention")
    expected_maps = zoo.registry.get_spec(name).attention
    for key in expected_maps:
        assert f"explain/{key}" in loaded, key
    if attention is not None:  # [B, Lh or 1, Lp (+1 NULL column)], or over 2Lp - 1 tree nodes / 2Lp elements
        width = loaded["explain/premise_tokens"].shape[1]
        widths = (2 * width - 1, 2 * width) if "premise_mask" in reference else (width, width + 1)
        assert attention.shape[0] == len(ALL_PAIRS) and attention.shape[2] in widths


@pytest.mark.parametrize("name", EXPORTED)
def test_one_pair_alone_is_answered_as_in_a_batch(exported, name):
    """A request of one pair (the demo page's, an online endpoint's) takes its own path: the bi-LSTMs run
    zoo.layers.loop_choice's "block" loop there, in the served graph, with the answer the batch gives; in
    the design the export was traced with (its zoo.json's "loop": this machine's `nli-zoo tune` choice, else
    the default) a step loop without TensorFlow's LSTM kernel and its per-call [W; U], or that kernel."""
    entry = entry_for(exported, name, "saved_model")
    np.testing.assert_allclose(entry["loaded"]["one_pair/probabilities"][0], entry["reference"]["probabilities"][0],
                               atol=TOLERANCE_SAVED_MODEL, rtol=0)
    model = zoo.create_model(name, vocabulary_size=10, build=False)
    has_bilstm = any(isinstance(layer, BidirectionalLSTM) for layer in iter_layers(model))
    kernel = read_metadata(entry["saved_model"]).get("loop", {}).get("design", DEFAULT_DESIGN) == "kernel"
    assert ("BlockLSTMV2" in entry["loaded"]["op_types"].tolist()) == (has_bilstm and kernel), name


@pytest.mark.parametrize("name", EXPORTED)
def test_edge_cases_give_answers(exported, name):
    """Empty sentences, a 5,000-word premise (truncated to the preset's maximum) and non-ASCII text."""
    entry = entry_for(exported, name, "saved_model")
    probabilities = entry["loaded"]["serving_default/probabilities"][len(PAIRS):]
    assert np.isfinite(probabilities).all() and np.allclose(probabilities.sum(-1), 1, atol=1e-5)
    premise_tokens = entry["loaded"]["explain/premise_tokens"]
    long_row = len(PAIRS) + 2
    limit = zoo.get_preset(name).data.max_premise_length
    assert sum(1 for t in premise_tokens[long_row] if t) == limit
    assert not any(premise_tokens[len(PAIRS)])  # the empty premise has no tokens
    # invalid UTF-8 bytes (possible over gRPC) give an answer or an InvalidArgument message, never a crash
    assert str(entry["loaded"]["invalid_utf8"])


def test_next_free_version_and_refusals(exported, tmp_path):
    run = own_run(exported, DOC_MODEL, tmp_path)
    model_dir = tmp_path / "models" / DOC_MODEL
    (model_dir / "7").mkdir(parents=True)
    (model_dir / "7" / "saved_model.pb").write_bytes(b"")  # an existing version (an empty one is a leftover)
    (model_dir / "notes").mkdir()
    assert next_version(str(model_dir)) == 8
    with pytest.raises(ExportError, match="already exists"):
        export_saved_model(run, str(model_dir), version=7)
    with pytest.raises(SystemExit) as stop:
        export_script.main(["--run-dir", str(tmp_path / "nothing")])
    assert stop.value.code == 2


def saved_model_cli(*args):
    result = subprocess.run([str(Path(sys.executable).parent / "saved_model_cli"), *args], capture_output=True,
                            text=True, env=env(), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_saved_model_cli_show(exported):
    out = saved_model_cli("show", "--dir", entry_for(exported, CLI_MODEL, "saved_model")["saved_model"], "--all")
    for signature in ("serving_default", "explain"):
        block = out.split(f"signature_def['{signature}']:")[1].split("signature_def[")[0]
        for name in INPUT_NAMES:
            assert re.search(rf"inputs\['{name}'\] tensor_info:\s+dtype: DT_STRING\s+shape: \(-1\)", block), name
        assert re.search(r"outputs\['probabilities'\] tensor_info:\s+dtype: DT_FLOAT\s+shape: \(-1, 3\)", block)
        assert re.search(r"outputs\['label'\] tensor_info:\s+dtype: DT_STRING\s+shape: \(-1\)", block)
        assert re.search(r"outputs\['label_id'\] tensor_info:\s+dtype: DT_INT32\s+shape: \(-1\)", block)
    explain = out.split("signature_def['explain']:")[1].split("signature_def[")[0]
    for name in ("attention", "attention_reverse"):
        assert re.search(rf"outputs\['{name}'\] tensor_info:\s+dtype: DT_FLOAT\s+shape: \(-1, -1, -1\)", explain)
    for name in ("premise_tokens", "hypothesis_tokens"):
        assert re.search(rf"outputs\['{name}'\] tensor_info:\s+dtype: DT_STRING\s+shape: \(-1, -1\)", explain)


@pytest.mark.parametrize("signature", ["serving_default", "explain"])
def test_saved_model_cli_run(exported, signature):
    """The session-based C++ loader of TF Serving answers like the Keras model."""
    entry = entry_for(exported, CLI_MODEL, "saved_model")
    pairs = PAIRS[:2]
    exprs = "premise={};hypothesis={}".format(json.dumps([p[0] for p in pairs]), json.dumps([p[1] for p in pairs]))
    out = saved_model_cli("run", "--dir", entry["saved_model"], "--tag_set", "serve", "--signature_def", signature,
                          "--input_exprs", exprs)
    block = out.split("Result for output key probabilities:")[1].split("Result for")[0]
    probabilities = np.array([float(x) for x in re.findall(r"[-+]?\d*\.\d+(?:e[-+]?\d+)?", block)]).reshape(-1, 3)
    np.testing.assert_allclose(probabilities, entry["reference"]["probabilities"][:2], atol=1e-5)
    labels = re.findall(r"b'(\w+)'", out.split("Result for output key label:")[1].split("Result for")[0])
    assert labels == [zoo.data.LABELS[i] for i in entry["reference"]["probabilities"][:2].argmax(-1)]
    if signature == "explain":
        assert "Result for output key attention_reverse:" in out and "Result for output key premise_tokens:" in out


# Syntactic tree models: parses in the request ------------------------------------------------------
@pytest.fixture(scope="module")
def syntactic_model(exported):
    return tf.saved_model.load(entry_for(exported, SYNTACTIC_MODEL, "saved_model")["saved_model"])


def test_the_parse_changes_the_answer_and_a_blank_one_means_the_complete_tree(exported, syntactic_model):
    """Pair 0 with its parse, with no parse, and with the complete tree's parse: the SavedModel answers as
    the Keras model given the same trees, and a blank parse is the complete binary tree."""
    run = load_run(exported, SYNTACTIC_MODEL)
    premise, hypothesis, premise_parse, hypothesis_parse = PAIRS[0]
    tokens = run.tokenizer.tokenize(premise)

    def bracketed(tree):
        return tree if isinstance(tree, str) else f"( {bracketed(tree[0])} {bracketed(tree[1])} )"

    complete = bracketed(zoo.data.trees.complete_tree(len(tokens), leaf=lambda t: tokens[t]))
    variants = [(premise, hypothesis, premise_parse, hypothesis_parse), (premise, hypothesis, "", hypothesis_parse),
                (premise, hypothesis, complete, hypothesis_parse)]
    request = {"instances": [dict(zip(INPUT_NAMES + PARSE_INPUT_NAMES, v)) for v in variants]}
    got = np.array([p["probabilities"] for p in rest_predict(syntactic_model, request)["predictions"]])
    np.testing.assert_allclose(got, run.predict_probabilities(variants), atol=TOLERANCE_SAVED_MODEL)
    np.testing.assert_allclose(got[1], got[2], atol=1e-6)                      # blank == complete tree
    assert np.abs(got[0] - got[1]).max() > 1e-6                                 # the parse is read


def test_documented_tree_request_is_answered(syntactic_model):
    """The request with parses shown in docs/serving.md matches the syntactic models' signature."""
    block = next(b for b in re.findall(r"```json\n(.*?)```", doc_text(), re.S) if "premise_binary_parse" in b)
    request = json.loads(block)
    prediction = rest_predict(syntactic_model, request)["predictions"][0]
    assert set(prediction) == set(SERVING_OUTPUTS) and abs(sum(prediction["probabilities"]) - 1) < 1e-5


@pytest.mark.parametrize("parse, reason", [("( ( A man ) is", "unbalanced brackets"),
                                           ("( ( A woman ) ( sings . ) )", "do not match the tokens"),
                                           ("( ( ) A )", "empty brackets")])
def test_a_malformed_parse_is_refused_naming_the_field_and_row(syntactic_model, parse, reason):
    instances = [dict(zip(INPUT_NAMES + PARSE_INPUT_NAMES, pair)) for pair in PAIRS]
    instances[1] = dict(instances[1], hypothesis_binary_parse=parse)
    with pytest.raises(RequestError, match=re.escape("hypothesis_binary_parse[1]: ") + ".*" + re.escape(reason)):
        rest_predict(syntactic_model, {"instances": instances})
    with pytest.raises(RequestError, match="keys"):   # the parses are part of the signature
        rest_predict(syntactic_model, {"instances": [{"premise": "A man.", "hypothesis": "A man."}]})


# TFLite -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXPORTED)
def test_tflite_equals_keras(exported, name):
    entry = entry_for(exported, name, "tflite")
    nli = TFLiteNLI(entry["tflite"])
    np.testing.assert_allclose(nli.predict_probabilities(ALL_PAIRS), entry["reference"]["probabilities"],
                               atol=TOLERANCE_TFLITE, rtol=0)
    label = zoo.data.LABELS[int(entry["reference"]["probabilities"][0].argmax())]
    assert nli.predict(PAIRS[:1])[0]["label"] == label


def test_tflite_uses_builtin_ops_only(exported):
    from ai_edge_litert.interpreter import Interpreter

    entry = entry_for(exported, DOC_MODEL, "tflite")
    interpreter = Interpreter(model_path=entry["tflite"])
    ops = {op["op_name"] for op in interpreter._get_ops_details()}
    assert "WHILE" in ops and not any(op.startswith("Flex") or op == "DELEGATE" for op in ops), ops
    inputs = {d["name"]: d for d in interpreter.get_signature_runner().get_input_details().values()}
    shapes = sorted(tuple(d["shape"]) for d in inputs.values())
    assert shapes == [(TFLITE_BATCH, 100), (TFLITE_BATCH, 100)]
    metadata = json.loads((Path(entry["tflite"]).parent / "tflite.json").read_text())
    assert metadata["batch_size"] == TFLITE_BATCH and metadata["model"] == DOC_MODEL


def test_tflite_refuses_to_overwrite(exported, tmp_path):
    entry = entry_for(exported, DOC_MODEL, "tflite")
    with pytest.raises(ExportError, match="already exists"):
        export_tflite(own_run(exported, DOC_MODEL, tmp_path), str(Path(entry["tflite"]).parent))


# The payloads of docs/tf-serving.md ---------------------------------------------------------------
@pytest.fixture(scope="module")
def doc_model(exported):
    return tf.saved_model.load(entry_for(exported, DOC_MODEL, "saved_model")["saved_model"])


def doc_text():
    return "\n".join((DOCS / page).read_text(encoding="utf-8") for page in ("serving.md", "tf-serving.md"))


def test_docs_contain_the_checked_payloads():
    text = doc_text()
    for name in ("predict_request.json", "predict_response.json", "explain_request.json", "grpc_client.py",
                 "models.config"):
        content = (EXAMPLES / name).read_text(encoding="utf-8").strip()
        assert content in text, f"docs/serving.md and tf-serving.md do not show docs/serving/{name} verbatim"


def test_rest_request_matches_the_signature(doc_model):
    request = json.loads((EXAMPLES / "predict_request.json").read_text(encoding="utf-8"))
    signature = doc_model.signatures["serving_default"]
    inputs = signature.structured_input_signature[1]
    assert all(set(instance) == set(inputs) for instance in request["instances"])
    assert all(spec.dtype == tf.string and spec.shape.as_list() == [None] for spec in inputs.values())
    response = rest_predict(doc_model, request)
    documented = json.loads((EXAMPLES / "predict_response.json").read_text(encoding="utf-8"))
    if os.environ.get("NLI_ZOO_WRITE_DOC_EXAMPLES"):  # regenerate the documented response
        rows = ",\n".join("    " + json.dumps(p, ensure_ascii=False) for p in response["predictions"])
        (EXAMPLES / "predict_response.json").write_text(f'{{\n  "predictions": [\n{rows}\n  ]\n}}\n',
                                                         encoding="utf-8")
        documented = response
    assert set(signature.structured_outputs) == set(SERVING_OUTPUTS)
    assert len(response["predictions"]) == len(documented["predictions"]) == len(request["instances"])
    for got, shown in zip(response["predictions"], documented["predictions"]):
        assert set(got) == set(shown) == set(SERVING_OUTPUTS)
        assert len(shown["probabilities"]) == 3 and abs(sum(shown["probabilities"]) - 1) < 1e-4
        assert shown["label"] == zoo.data.LABELS[shown["label_id"]]
        assert got["label"] == zoo.data.LABELS[got["label_id"]]
    with pytest.raises(RequestError, match="keys"):
        rest_predict(doc_model, {"instances": [{"premise": "A man."}]})


def test_a_request_whose_fields_differ_in_rows_names_the_field(doc_model):
    serve = doc_model.signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="hypothesis must have as many rows as premise"):
        serve(premise=tf.constant(["A man sleeps.", "A dog runs."]), hypothesis=tf.constant(["A man."]))


def test_rest_explain_request(doc_model):
    request = json.loads((EXAMPLES / "explain_request.json").read_text(encoding="utf-8"))
    assert request["signature_name"] == "explain"
    prediction = rest_predict(doc_model, request)["predictions"][0]
    tokens = [t for t in prediction["premise_tokens"] if t]
    assert len(prediction["attention"]) == len(prediction["hypothesis_tokens"])
    assert len(prediction["attention"][0]) == len(prediction["premise_tokens"]) and tokens


def test_grpc_client_example(doc_model):
    spec = importlib.util.spec_from_file_location("grpc_client", EXAMPLES / "grpc_client.py")
    client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(client)
    request = client.make_request([pair[:2] for pair in PAIRS[:2]], model_name=DOC_MODEL)
    assert request.model_spec.name == DOC_MODEL and set(request.inputs) == set(INPUT_NAMES)
    outputs = grpc_predict(doc_model, request)
    assert outputs["probabilities"].shape == (2, 3) and outputs["label"].dtype == object


def test_models_config_serves_exported_models():
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    config = text_format.Parse((EXAMPLES / "models.config").read_text(encoding="utf-8"),
                               model_server_config_pb2.ModelServerConfig())
    entries = config.model_config_list.config
    assert len(entries) >= 2
    for entry in entries:
        assert entry.name in MODELS and entry.base_path == f"/models/{entry.name}"  # export.py's default layout
        assert entry.model_platform == "tensorflow"


# TF Serving's deployment files ----------------------------------------------------------------------
def run_warmup(loaded, logs):
    """Runs warm-up `PredictionLog`s through a loaded SavedModel; returns the outputs per record."""
    results = []
    for log in logs:
        request = log.predict_log.request
        signature = loaded.signatures[request.model_spec.signature_name]
        inputs = {name: tf.constant(tf.make_ndarray(proto)) for name, proto in request.inputs.items()}
        assert set(inputs) == set(signature.structured_input_signature[1])
        results.append({k: v.numpy() for k, v in signature(**inputs).items()})
    return results


@pytest.mark.parametrize("name, max_batch", [(DOC_MODEL, None), (SYNTACTIC_MODEL, 2)])
def test_warmup_requests_cover_every_shape_class_and_run(exported, request, name, max_batch):
    """Every warm-up record runs (the syntactic model, which parses in graph, up to 2 pairs a record)."""
    from zoo.data.batching import LengthGrid
    from zoo.export import serving_files

    entry = entry_for(exported, name, "saved_model")
    all_logs = serving_files.read_warmup(entry["saved_model"])
    assert 0 < len(all_logs) <= serving_files.MAX_WARMUP_RECORDS
    logs = [log for log in all_logs
            if max_batch is None or len(log.predict_log.request.inputs["premise"].string_val) <= max_batch]
    run = load_run(exported, name)
    grid = LengthGrid.for_max_lengths(100, 100)
    seen = set()
    loaded = request.getfixturevalue("doc_model" if name == DOC_MODEL else "syntactic_model")  # loaded once
    for log, outputs in zip(logs, run_warmup(loaded, logs)):
        request = log.predict_log.request
        assert request.model_spec.name == name
        premises = [s.decode() for s in tf.make_ndarray(request.inputs["premise"])]
        hypotheses = [s.decode() for s in tf.make_ndarray(request.inputs["hypothesis"])]
        lengths = {(len(p), len(h)) for p, h in zip(run.tokenizer.tokenize_batch(premises),
                                                    run.tokenizer.tokenize_batch(hypotheses))}
        assert len(lengths) == 1  # one shape class per request, at the class's boundary lengths
        (lp, lh), = lengths
        assert (lp, lh) in grid.shapes
        assert outputs["probabilities"].shape == (len(premises), 3) and np.isfinite(outputs["probabilities"]).all()
        seen.add((request.model_spec.signature_name, len(premises), lp, lh))
    expected = {("serving_default", b, lp, lh) for b in serving_files.DEFAULT_BATCH_SIZES for lp, lh in grid.shapes
                if max_batch is None or b <= max_batch}
    assert expected | {("explain", 1, lp, lh) for lp, lh in grid.shapes} == seen
    if max_batch is not None:  # the other records ask for every batch size, with blank parses
        requests = [log.predict_log.request for log in all_logs]
        assert {len(r.inputs["premise"].string_val) for r in requests} == set(serving_files.DEFAULT_BATCH_SIZES)
        assert all(set(r.inputs["premise_binary_parse"].string_val) == {b""} for r in requests)


def test_batching_parameters_and_models_config_parse(exported, tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    from zoo.export import serving_files

    model_dir = Path(entry_for(exported, DOC_MODEL, "saved_model")["saved_model"]).parent
    batching = text_format.Parse((model_dir / serving_files.BATCHING_FILE).read_text(encoding="utf-8"),
                                 serving_files.batching_parameters_class()())
    assert list(batching.allowed_batch_sizes) == list(serving_files.DEFAULT_BATCH_SIZES)
    assert batching.max_batch_size.value == batching.allowed_batch_sizes[-1]
    assert batching.batch_timeout_micros.value > 0 and not batching.pad_variable_length_inputs  # [B] strings
    # every allowed batch size is warmed up
    sizes = {len(log.predict_log.request.inputs["premise"].string_val)
             for log in serving_files.read_warmup(str(model_dir / "1"))}
    assert sizes == set(batching.allowed_batch_sizes)

    def labels(directory):
        config = text_format.Parse((directory / serving_files.MODELS_CONFIG_FILE).read_text(encoding="utf-8"),
                                   model_server_config_pb2.ModelServerConfig())
        (entry,) = config.model_config_list.config
        assert entry.name == directory.name and entry.base_path == f"/models/{directory.name}"
        assert entry.model_platform == "tensorflow"
        return dict(entry.version_labels), list(entry.model_version_policy.specific.versions)

    assert labels(model_dir) == ({"stable": 1, "canary": 1}, [1])  # a first export is both
    # a second export becomes the canary beside the stable first; export.py can name the stable one
    run = load_run(exported, DOC_MODEL)
    other = tmp_path / DOC_MODEL
    for version in (1, 2):
        export_saved_model(run, str(other), version, batch_sizes=(1, 2))
    assert labels(other) == ({"stable": 1, "canary": 2}, [1, 2])
    export_script.main(["--run-dir", exported[DOC_MODEL]["run_dir"], "--out", str(other), "--stable-version", "2",
                        "--allowed-batch-sizes", "1,4"])
    assert labels(other) == ({"stable": 2, "canary": 3}, [2, 3])
    with pytest.raises(ExportError, match="stable-version 9"):
        export_saved_model(run, str(other), stable_version=9)


def test_docs_show_the_serving_files_and_the_docker_command():
    text = doc_text()
    for flag in ("--enable_batching", "--batching_parameters_file=", "--model_config_file=",
                 "tf_serving_warmup_requests", "labels/stable"):
        assert flag in text, flag


def test_xla_and_sorted_chunks_equal_keras(exported, tmp_path):
    """`--xla-max-batch 2 --chunk-size 3`: batches of 1 and 2 pairs run an XLA-compiled model on padded shape
    classes, larger ones length-sorted chunks of 3 pairs; every row answers like the Keras model."""
    name = DOC_MODEL
    run = own_run(exported, name, tmp_path)
    path = export_saved_model(run, str(tmp_path / name), batch_sizes=(1, 2, 4), xla_max_batch=2, chunk_size=3)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    reference = exported[name]["reference"]["probabilities"]
    pairs = [pair[:2] for pair in ALL_PAIRS]
    for rows in ([0], [1, 2], [4, 5, 6], list(range(len(pairs)))):  # XLA at 1 and 2 pairs, plain at 3, 3 chunks at 7
        got = signature(premise=tf.constant([pairs[i][0] for i in rows]),
                        hypothesis=tf.constant([pairs[i][1] for i in rows]))
        np.testing.assert_allclose(got["probabilities"], reference[rows], atol=TOLERANCE_SAVED_MODEL, rtol=0)
        assert got["label_id"].numpy().tolist() == reference[rows].argmax(-1).tolist()
    with pytest.raises(ExportError, match="parse trees"):
        export_saved_model(own_run(exported, SYNTACTIC_MODEL, tmp_path), str(tmp_path / "tree"), xla_max_batch=4)


def test_each_export_traces_the_model_once(exported, tmp_path, monkeypatch):
    """The SavedModel's two signatures share one trace of the model and the TFLite export traces it once
    (zoo.export.archive: nothing is traced before the save, which caches its traces apart), and an endpoint
    without an input signature is refused when it is added."""
    from zoo.export.archive import ServingArchive
    from zoo.export.tflite import convert

    run = own_run(exported, DOC_MODEL, tmp_path)
    original, traces = type(run.model).explain, []

    def explain(model, inputs, **options):
        traces.append(options.get("xla", False))
        return original(model, inputs, **options)

    monkeypatch.setattr(type(run.model), "explain", explain)
    path = export_saved_model(run, str(tmp_path / "models"))
    assert traces == [False]
    assert sorted(tf.saved_model.load(path).signatures) == ["explain", "serving_default"]
    _, _, shapes = convert(run, batch_size=2, maps=False)
    assert traces == [False, True] and shapes == {"probabilities": [2, 3]}
    with pytest.raises(ValueError, match="input_signature"):
        ServingArchive(run.model).add_endpoint("serving_default", lambda texts: texts)


# TFLite that fits a device: a smaller vocabulary, quantized weights ---------------------------------------
@pytest.fixture(scope="module")
def device_exports(tmp_path_factory):
    """A tiny DOC_MODEL run with 64-d vectors (tables of at least 1,024 values are the ones the converter
    quantizes) exported with a vocabulary cut to 120 ids, float and dynamic-range, checked on the shipped
    test split (the tiny run's data)."""
    from zoo.export.tflite import test_examples_of

    root = tmp_path_factory.mktemp("device")
    run = zoo.load(make_run(root / "run", DOC_MODEL, embedding_dim=64))
    examples = test_examples_of(run)
    paths = {quantize: export_tflite(run, str(root / quantize), batch_size=TFLITE_BATCH, max_vocabulary=120,
                                     quantize=quantize, test_examples=examples)
             for quantize in ("none", "dynamic-range")}
    return {"run": run, "examples": examples, "paths": paths}


def test_cut_vocabulary_maps_cut_words_to_unk(device_exports):
    """The float export with 120 ids answers like the Keras model given [UNK] for every word past id 119."""
    from zoo.data.vocab import UNK_ID
    from zoo.export.tflite import read_report

    run = device_exports["run"]
    nli = TFLiteNLI(device_exports["paths"]["none"])
    assert len(nli.vocab) == 120 and nli.vocab.words == run.vocab.words[:120]
    pairs = [pair[:2] for pair in PAIRS]
    inputs = run.encode(pairs)
    cut = {key: np.where(value >= 120, UNK_ID, value) for key, value in inputs.items()}
    assert any((inputs[key] >= 120).any() for key in inputs)  # the pairs use cut words
    expected = np.asarray(run.model.explain(cut)["probabilities"])
    np.testing.assert_allclose(nli.predict_probabilities(pairs), expected, atol=TOLERANCE_TFLITE, rtol=0)
    report = read_report(device_exports["paths"]["none"])
    examples = device_exports["examples"]
    changed = sum(1 for key in ("premise", "hypothesis")
                  for tokens in run.tokenizer.tokenize_batch([e[key] for e in examples])
                  for t in tokens[:100] if t in run.vocab and run.vocab.id(t) >= 120)
    assert report["vocabulary"]["test_tokens"]["changed"] == changed > 0
    assert report["vocabulary"]["kept"] == 120 and report["vocabulary"]["cut"] == len(run.vocab) - 120


def test_quantized_export_is_smaller_and_checked_against_the_float_model(device_exports):
    from zoo.export.tflite import read_report

    float_report = read_report(device_exports["paths"]["none"])
    report = read_report(device_exports["paths"]["dynamic-range"])
    assert report["quantize"] == "dynamic-range"
    assert report["size_bytes"] < float_report["size_bytes"]
    accuracy = report["accuracy"]
    assert accuracy["examples"] == len(device_exports["examples"])
    assert accuracy["difference_points"] == pytest.approx(100 * (accuracy["tflite"] - accuracy["reference"]), abs=1e-3)
    assert accuracy["within_target"] == (abs(accuracy["difference_points"]) <= 0.5)
    # the largest probability change over the test split (cut vocabulary and int8 weights together)
    examples = device_exports["examples"]
    pairs_of_split = [(e["premise"], e["hypothesis"]) for e in examples]
    change = np.abs(TFLiteNLI(device_exports["paths"]["dynamic-range"]).predict_probabilities(pairs_of_split)
                    - device_exports["run"].predict_probabilities(pairs_of_split)).max()
    assert accuracy["max_probability_difference"] == pytest.approx(change, abs=1e-6) and change > 0
    # the quantized weights move the probabilities a little, not the interface
    pairs = [pair[:2] for pair in PAIRS]
    quantized = TFLiteNLI(device_exports["paths"]["dynamic-range"]).predict_probabilities(pairs)
    floating = TFLiteNLI(device_exports["paths"]["none"]).predict_probabilities(pairs)
    assert quantized.shape == floating.shape and np.abs(quantized - floating).max() < 0.02


def test_tflite_predictor_has_the_predictor_interface(exported, device_exports):
    from zoo.predictors import PredictorNotFound, open_predictor

    entry = entry_for(exported, DOC_MODEL, "tflite")
    predictor = open_predictor(entry["tflite"])
    assert predictor.kind == "tflite" and predictor.labels == tuple(zoo.data.LABELS)
    got = predictor.predict(ALL_PAIRS, batch_size=3)
    np.testing.assert_allclose([[p["probabilities"][n] for n in predictor.labels] for p in got],
                               entry["reference"]["probabilities"], atol=TOLERANCE_TFLITE, rtol=0)
    explanation = predictor.explain(*PAIRS[0][:2])
    reference = open_predictor(str(Path(entry["saved_model"]).parent)).explain(*PAIRS[0][:2])  # latest version
    assert explanation.premise_tokens == reference.premise_tokens and explanation.label == reference.label
    np.testing.assert_allclose(explanation.maps["attention"], reference.maps["attention"], atol=TOLERANCE_TFLITE)
    with pytest.raises(PredictorNotFound, match="a run directory .*, a SavedModel or TF Serving model folder"):
        open_predictor(str(Path(entry["tflite"]).parent.parent))
    with pytest.raises(ValueError, match=r"pair 1: expected \(premise, hypothesis\)"):  # was an IndexError
        predictor.nli.predict([("A man.", "A dog."), ("x",)])


def test_float16_and_option_errors(exported, tmp_path, capsys):
    run = own_run(exported, DOC_MODEL, tmp_path)
    path = export_tflite(run, str(tmp_path / "f16"), batch_size=1, quantize="float16")
    nli = TFLiteNLI(path)
    reference = exported[DOC_MODEL]["reference"]["probabilities"][:1]
    np.testing.assert_allclose(nli.predict_probabilities(PAIRS[:1]), reference, atol=1e-3)
    assert nli.metadata["quantize"] == "float16"
    for argv, message in ((["--quantize", "float16"], "--quantize applies to --format tflite"),
                          (["--format", "tflite", "--xla-max-batch", "4"],
                           "--xla-max-batch applies to --format saved_model"),
                          (["--allowed-batch-sizes", "0,2"], "whole numbers from 1 to 65,536")):
        with pytest.raises(SystemExit) as stop:
            export_script.main(["--run-dir", exported[DOC_MODEL]["run_dir"], "--out", str(tmp_path / "x"), *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err
