"""TF Serving's deployment files, written by `export.py --format saved_model` beside the SavedModel.

```
models/rocktaschel_wbw/
  batching_parameters.txt        # --batching_parameters_file (text-format BatchingParameters)
  models.config                  # --model_config_file: this model, its versions, labels stable / canary
  1/ 2/ ...                      # the SavedModel versions
  2/assets.extra/tf_serving_warmup_requests   # TFRecord of PredictionLog, replayed when a version loads
```

Warm-up: TF Serving replays `assets.extra/tf_serving_warmup_requests` (at most 1,000 records) before it
declares a version available, so the first real requests do not pay the lazy work of the first runs
(the vocabulary table, the graph's executors, oneDNN's kernels for each shape and, with
`--xla-max-batch`, the XLA compilations). The graph pads token ids to the batch's longest sentence, so
the shapes the model meets are `[B, Lp]`, `[B, Lh]`; the requests cover every batch size of
`allowed_batch_sizes` (the sizes TF Serving's batching pads a batch to) times every sentence-length
class of the run's length grid (`zoo.data.batching.LengthGrid`, the classes of training: premises up
to 14, 22, 36, 100 tokens by hypotheses up to 10, 20, 100 for the default presets), plus one `explain`
request per length class. Each request holds `B` pairs whose sentences have exactly the class's
boundary length.

Batching: `batching_parameters.txt` lets TF Serving merge concurrent requests into batches of the
allowed sizes (`--enable_batching`). The signatures take `[B]` strings, so merging needs no padding of
other dimensions (`pad_variable_length_inputs: false`); it is set where a signature has an input of
rank above 1 with an open dimension.

Version labels: `models.config` serves two versions, the one just exported labelled `canary` and the
previous highest one labelled `stable` (a first export is both), so clients can ask for
`/v1/models/NAME/labels/stable:predict` while the new version is tried on part of the traffic.
Promote by editing the labels (TF Serving rereads the file with `--model_config_file_poll_wait_seconds`).

The protos: `tensorflow_serving.apis.prediction_log_pb2` and `tensorflow_serving.config.model_server_config_pb2`
come with `tensorflow-serving-api`; `BatchingParameters` does not ship with it, so `batching_parameters_class`
declares the fields TF Serving reads (same names, numbers and types as
`tensorflow_serving/servables/tensorflow/session_bundle_config.proto`) to parse and check the file.
"""

import os

import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

from zoo import fileio

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
BATCHING_FILE = "batching_parameters.txt"
MODELS_CONFIG_FILE = "models.config"
MAX_WARMUP_RECORDS = 1000          # TF Serving reads at most this many warm-up records
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_BATCH_TIMEOUT_MICROS = 2000
DEFAULT_MAX_ENQUEUED_BATCHES = 100
STABLE, CANARY = "stable", "canary"


# Sentence-length classes ---------------------------------------------------------------------------
def length_classes(grid):
    """The `(premise length, hypothesis length)` classes of a run: the cells of its length grid
    (`zoo.runs.datasets.length_grid`).

    An open last boundary (a preset without a maximum length) is represented by twice the last closed one
    (or 50), a length no closed class holds.

    Returns:
        a list of `(int, int)`.
    """
    def closed(boundaries):
        known = [b for b in boundaries if b is not None]
        return [b if b is not None else 2 * (known[-1] if known else 25) for b in boundaries]

    return [(p, h) for p in closed(grid.premise_boundaries) for h in closed(grid.hypothesis_boundaries)]


def filler_words(vocab, tokenizer, count=64):
    """Up to `count` vocabulary words that the tokenizer gives back as exactly one token each (so a
    sentence of n of them has n tokens), most frequent first; plain letters when the vocabulary has none."""
    candidates = [w for w in vocab.words[3:3 + 20 * count] if w.isalpha()][:4 * count]
    words = []
    if candidates:
        tokens = tokenizer.tokenize_batch(candidates)
        words = [w for w, t in zip(candidates, tokens) if t == [w]][:count]
    return words or ["a", "b", "c"]


def sentence(words, length, offset=0):
    """A sentence of `length` tokens made of `words` (cycling from `offset`)."""
    return " ".join(words[(offset + i) % len(words)] for i in range(length))


# Warm-up requests ------------------------------------------------------------------------------------
def warmup_inputs(input_names, words, premise_length, hypothesis_length, batch_size):
    """`{input name: [str] * batch_size}` of one warm-up request (blank parses for the parse inputs)."""
    columns = {"premise": [sentence(words, premise_length, i) for i in range(batch_size)],
               "hypothesis": [sentence(words, hypothesis_length, 7 + i) for i in range(batch_size)]}
    return {name: columns.get(name, [""] * batch_size) for name in input_names}


def warmup_plan(classes, batch_sizes, explain_signature="explain"):
    """The `(signature, batch size, (premise length, hypothesis length))` of every warm-up request: each
    batch size times each class on `serving_default`, then each class once on `explain` (batch 1).

    Raises:
        ValueError: more than TF Serving's 1,000 records.
    """
    plan = [("serving_default", b, c) for b in batch_sizes for c in classes]
    if explain_signature:
        plan += [(explain_signature, 1, c) for c in classes]
    if len(plan) > MAX_WARMUP_RECORDS:
        raise ValueError(f"{len(plan)} warm-up requests, TF Serving reads at most {MAX_WARMUP_RECORDS}: "
                         "give fewer batch sizes")
    return plan


def warmup_records(model_name, input_names, words, classes, batch_sizes, explain_signature="explain"):
    """The serialized `PredictionLog` records (one `PredictRequest` each) of `warmup_plan`."""
    records = []
    for signature, batch_size, (premise_length, hypothesis_length) in warmup_plan(classes, batch_sizes,
                                                                                 explain_signature):
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model_name
        request.model_spec.signature_name = signature
        for name, values in warmup_inputs(input_names, words, premise_length, hypothesis_length,
                                          batch_size).items():
            request.inputs[name].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string, shape=[batch_size]))
        log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
        records.append(log.SerializeToString())
    return records


def write_warmup(saved_model_dir, records):
    """Writes `assets.extra/tf_serving_warmup_requests` (a TFRecord file) into a SavedModel directory."""
    path = os.path.join(saved_model_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return path


def read_warmup(path):
    """The `PredictionLog` messages of a warm-up file (a SavedModel directory or the file itself)."""
    if os.path.isdir(path):
        path = os.path.join(path, WARMUP_FILE)
    logs = []
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog()
        log.ParseFromString(record.numpy())
        logs.append(log)
    return logs


# Batching parameters -------------------------------------------------------------------------------
def needs_padding(input_specs):
    """Whether TF Serving must pad inputs to merge requests: some input has rank above 1 with an open
    dimension past the batch one (`pad_variable_length_inputs`)."""
    return any(spec.shape.rank is None or (spec.shape.rank > 1 and None in spec.shape.as_list()[1:])
               for spec in input_specs)


def batching_parameters_text(batch_sizes=DEFAULT_BATCH_SIZES, batch_timeout_micros=DEFAULT_BATCH_TIMEOUT_MICROS,
                             max_enqueued_batches=DEFAULT_MAX_ENQUEUED_BATCHES, pad_variable_length_inputs=False):
    """The text-format `BatchingParameters` of `--batching_parameters_file`.

    Args:
        batch_sizes: the allowed batch sizes, increasing; the last is `max_batch_size`.
        batch_timeout_micros: how long a batch waits for more requests before it runs.
        max_enqueued_batches: the queue length (in batches) before requests are refused.
        pad_variable_length_inputs: pad inputs of other open dimensions when merging requests.
    """
    sizes = sorted(int(b) for b in batch_sizes)
    lines = ["# TF Serving batching (--enable_batching --batching_parameters_file=THIS_FILE), written by export.py.",
             "# Requests are merged into batches of at most max_batch_size pairs; a batch is padded up to the",
             "# next allowed size, the sizes the warm-up requests of each version cover.",
             f"max_batch_size {{ value: {sizes[-1]} }}",
             f"batch_timeout_micros {{ value: {int(batch_timeout_micros)} }}",
             f"max_enqueued_batches {{ value: {int(max_enqueued_batches)} }}",
             "# num_batch_threads: left to the server (its default: the number of cores).",
             *[f"allowed_batch_sizes: {b}" for b in sizes],
             "# The signatures take [B] strings: merged requests need no padding of other dimensions.",
             f"pad_variable_length_inputs: {'true' if pad_variable_length_inputs else 'false'}"]
    return "\n".join(lines) + "\n"


def batching_parameters_class():
    """The `BatchingParameters` message class: TF Serving's own where importable, else one declared here
    with the fields TF Serving reads (names, numbers and types of session_bundle_config.proto)."""
    try:  # deferred: the module ships with TF Serving's own builds only, not with tensorflow-serving-api
        from tensorflow_serving.servables.tensorflow import session_bundle_config_pb2
        return session_bundle_config_pb2.BatchingParameters
    except ImportError:
        pass
    pool = descriptor_pool.DescriptorPool()
    wrappers = descriptor_pb2.FileDescriptorProto()
    wrappers_pb2.DESCRIPTOR.CopyToProto(wrappers)
    pool.Add(wrappers)
    proto = descriptor_pb2.FileDescriptorProto(name="nli_zoo/batching_parameters.proto",
                                               package="tensorflow.serving", syntax="proto3",
                                               dependency=["google/protobuf/wrappers.proto"])
    message = proto.message_type.add(name="BatchingParameters")
    field = descriptor_pb2.FieldDescriptorProto
    for number, name in enumerate(("max_batch_size", "batch_timeout_micros", "max_enqueued_batches",
                                   "num_batch_threads"), 1):
        message.field.add(name=name, number=number, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                          type_name=".google.protobuf.Int64Value")
    message.field.add(name="thread_pool_name", number=5, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                      type_name=".google.protobuf.StringValue")
    message.field.add(name="allowed_batch_sizes", number=6, type=field.TYPE_INT64, label=field.LABEL_REPEATED)
    message.field.add(name="pad_variable_length_inputs", number=7, type=field.TYPE_BOOL,
                      label=field.LABEL_OPTIONAL)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))


# models.config -----------------------------------------------------------------------------------------
def models_config_text(model_name, base_path, versions, labels):
    """The text-format `ModelServerConfig` serving one model's `versions` with `labels` `{label: version}`."""
    lines = ["# TF Serving model config (--model_config_file=THIS_FILE), written by export.py.",
             f"# Clients pick a version by label: /v1/models/{model_name}/labels/{STABLE}:predict (REST) or",
             "# model_spec.version_label (gRPC). Promote the canary by pointing 'stable' at it.",
             "model_config_list {", "  config {", f'    name: "{model_name}"', f'    base_path: "{base_path}"',
             '    model_platform: "tensorflow"', "    model_version_policy {", "      specific {"]
    lines += [f"        versions: {v}" for v in sorted(set(versions))]
    lines += ["      }", "    }"]
    for label, version in labels.items():
        lines += ["    version_labels {", f'      key: "{label}"', f"      value: {version}", "    }"]
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def existing_versions(model_dir):
    """The numeric version folders holding a SavedModel under `model_dir`, increasing
    (`zoo.fileio.version_numbers`)."""
    return fileio.version_numbers(model_dir, holding="saved_model.pb")


def version_labels(model_dir, canary, stable=None):
    """`{"stable": version, "canary": version}`: the new version is the canary; stable is `stable`, or the
    highest other version, or the canary itself for a first export.

    Raises:
        ValueError: `stable` is not an exported version.
    """
    versions = existing_versions(model_dir)
    if stable is None:
        older = [v for v in versions if v < canary] or [v for v in versions if v != canary]
        stable = older[-1] if older else canary
    elif int(stable) not in versions:
        raise ValueError(f"--stable-version {stable} is not a version under {model_dir} "
                         f"(there are {', '.join(map(str, versions)) or 'none'})")
    return {STABLE: int(stable), CANARY: int(canary)}


def _write_text(path, text):
    with fileio.atomic_write(path, "w", encoding="utf-8") as f:  # a per-process temporary name, then renamed
        f.write(text)
    return path


def write_model_files(model_dir, model_name, canary, base_path=None, stable=None, batch_sizes=DEFAULT_BATCH_SIZES,
                      pad_variable_length_inputs=False):
    """Writes `batching_parameters.txt` and `models.config` into the model folder.

    Args:
        model_dir: `MODELS/NAME`, holding the versions.
        model_name: the served name.
        canary: the version just exported.
        base_path: the model folder as the server sees it (default `/models/<folder name>`, the path of
            the documented `docker run` mount).
        stable: the version labelled stable (default: the previous highest).
        batch_sizes: the allowed batch sizes.
        pad_variable_length_inputs: see `batching_parameters_text`.

    Returns:
        `{"batching_parameters": path, "models_config": path, "labels": {label: version}}`.
    """
    labels = version_labels(model_dir, canary, stable)
    base_path = base_path or "/models/" + os.path.basename(os.path.normpath(model_dir))
    batching = _write_text(os.path.join(model_dir, BATCHING_FILE),
                           batching_parameters_text(batch_sizes, pad_variable_length_inputs=pad_variable_length_inputs))
    fileio.fault_point("export:saved_model:batching-written")
    config = _write_text(os.path.join(model_dir, MODELS_CONFIG_FILE),
                         models_config_text(model_name, base_path, labels.values(), labels))
    return {"batching_parameters": batching, "models_config": config, "labels": labels}
