"""The measuring process of scripts/benchmark_serving.py: one configuration (a SavedModel, Keras's
`predict_on_batch`, a LiteRT interpreter) in a fresh process, its thread pools set before anything runs.

    python scripts/serving_child.py measure SPEC     # latency and throughput (zoo.measurements.timing)
    python scripts/serving_child.py profile SPEC     # the TensorFlow profiler over serving_default

SPEC is the JSON the benchmark builds (`benchmark_serving.configuration`); the result is one line of
`zoo.measurements.child`.
"""

import json
import os
import sys

from zoo.measurements import child as protocol
from zoo.measurements.timing import measure, peak_rss_mb

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

THROUGHPUT_BATCHES = (32, 256)


def read_pairs(path=None):
    """`[(premise, hypothesis)]` raw sentences: the shipped rows (every split), or a .jsonl file or tokens folder
    read by the library (`zoo.data.tokens_folder.read_pairs`)."""
    from zoo.data.corpora import load_corpus
    from zoo.data.tokens_folder import read_pairs as read_labelled_pairs

    if path:
        examples, _ = read_labelled_pairs(path)
    else:
        splits, _ = load_corpus("snli_sample")
        examples = [example for split in sorted(splits) for example in splits[split]]
    return [(example["premise"], example["hypothesis"]) for example in examples]


def batches(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def set_tf_threads(threads, intra=None):
    """TensorFlow's pools: `threads` inter-op threads and `intra` (default: as many) intra-op threads."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(intra or threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


def measure_child(spec):
    """Measures one configuration (`spec`: the benchmark's JSON) and emits its result."""
    pairs = read_pairs(spec["data"])[:spec["pairs"]]
    latency_pairs = pairs[:spec["latency_pairs"]]
    kind, path, threads = spec["kind"], spec["path"], spec["threads"]
    if kind.startswith("saved_model"):
        set_tf_threads(threads, spec.get("intra"))
        import tensorflow as tf

        signature = tf.saved_model.load(path).signatures["serving_default"]

        def prepare(chunk):
            return {"premise": tf.constant([p for p, _ in chunk]), "hypothesis": tf.constant([h for _, h in chunk])}

        def call(inputs):
            signature(**inputs)["probabilities"].numpy()
    elif kind == "keras":
        set_tf_threads(threads, spec.get("intra"))
        import tensorflow as tf

        import zoo

        run = zoo.load(path)

        def prepare(chunk):
            return {k: tf.constant(v) for k, v in run.encode(chunk).items()}

        def call(inputs):  # Keras's predict function (traced once, open shapes)
            run.model.predict_on_batch(inputs)
    elif kind.startswith("tflite"):
        import numpy as np

        from zoo.export.tflite import TFLiteNLI

        latency_nli = TFLiteNLI(path["b1"], num_threads=threads)
        nli = TFLiteNLI(path["b32"], num_threads=threads)

        def prepare(chunk):  # token ids (tokenized outside the measurement), in invocations of the fixed batch
            engine = latency_nli if len(chunk) == 1 else nli
            ids = engine.encode(chunk)
            rows = engine.batch_size
            out = []
            for start in range(0, len(chunk), rows):
                part = {k: v[start:start + rows] for k, v in ids.items()}
                n = len(part["premise"])
                out.append({k: np.pad(v, [[0, rows - n], [0, 0]]) for k, v in part.items()})
            return engine, out

        def call(prepared):
            engine, invocations = prepared
            for inputs in invocations:
                engine._runner(**inputs)
    else:
        raise ValueError(kind)
    latency = [prepare([pair]) for pair in latency_pairs]
    throughput = {size: [(prepare(chunk), len(chunk)) for chunk in batches(pairs, size)]
                  for size in THROUGHPUT_BATCHES}
    result = measure(call, latency, throughput)
    result["peak_mb"] = peak_rss_mb()
    protocol.emit(result)


def profile_child(spec):
    """Traces `serving_default` on batches of `spec["batch"]` pairs with the TF profiler; prints the totals."""
    set_tf_threads(spec["threads"], spec.get("intra"))
    import collections

    import tensorflow as tf

    from tf_profile import profile

    pairs = read_pairs(spec["data"])[:spec["pairs"]]
    signature = tf.saved_model.load(spec["path"]).signatures["serving_default"]
    inputs = [{"premise": tf.constant([p for p, _ in chunk]), "hypothesis": tf.constant([h for _, h in chunk])}
              for chunk in batches(pairs, spec["batch"])]
    for item in inputs:
        signature(**item)

    def serve_all():
        for item in inputs:
            signature(**item)["probabilities"].numpy()

    wall, ops = profile(serve_all)
    by_type, by_part = collections.Counter(), collections.Counter()
    for path, op_type, seconds in ops:
        by_type[op_type] += seconds
        by_part[graph_part(path, op_type)] += seconds
    protocol.emit({"wall_s": wall, "pairs": len(pairs), "by_type": dict(by_type), "by_part": dict(by_part)})


STRING_OPS = ("StringSplit", "RegexReplace", "StaticRegexReplace", "StringLower", "UnicodeTranscode", "LookupTable",
              "RaggedTensor", "StringToHashBucket", "StaticRegexFullMatch", "StringStrip")


def graph_part(path, op_type):
    """The part of the serving graph an op belongs to: tokenization and lookup, or the model's layer (the
    first name scope inside the innermost function call, past the chunk loop and branches), marked when
    inside the layer's recurrent loop."""
    if any(key in op_type for key in STRING_OPS):
        return "tokenization and lookup"
    parts = [part for part in path.split("/") if part]
    calls = [i for i, part in enumerate(parts) if part.startswith(("StatefulPartitionedCall", "PartitionedCall"))]
    inner = parts[calls[-1] + 1:] if calls else parts
    if len(inner) < 2:  # ops of the serving function itself (sorting, padding, labels)
        return "serving function"
    layer = inner[0].rstrip("0123456789").rstrip("_") or inner[0]
    return f"{layer} (recurrent loop)" if "while" in inner[1:] else layer


def main(argv=None):
    kind, spec = (argv or sys.argv[1:])[:2]
    {"measure": measure_child, "profile": profile_child}[kind](json.loads(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
