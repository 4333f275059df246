"""Serving speed on a CPU: the exported SavedModel, the Keras model, the TFLite variants (and, optionally,
the PyTorch reference ESIM), each model at its paper size with random weights.

    python scripts/benchmark_serving.py                                   # rocktaschel_wbw, mlstm, esim
    python scripts/benchmark_serving.py --models esim --rounds 3 --xla-max-batch 8 \\
        --torch-reference ESIM --torch-python /work/torchenv/bin/python
    python scripts/benchmark_serving.py --data ../shared/data/snli_1.0_dev_tokens --markdown

The machine comes first (`scripts/machine.py`: CPU model, family / model, flags, thread settings, the
fp32 GEMM peak on one thread and every core); `b32 % GEMM peak` is ESIM's useful arithmetic at batch 32
(its products on the real tokens, `machine.esim_flops`) over that peak at the same thread count.

What is measured, for every model (a 40,000-word vocabulary, 300-d vectors, the preset's sizes):
- `saved_model`: the exported SavedModel's `serving_default` from raw strings (tokenization, vocabulary
  lookup and truncation in the graph, as TF Serving runs it), exported as `export.py` does (a batch of
  more than 32 pairs runs in length-sorted chunks of 32; bi-LSTMs on packed sequences,
  `zoo.layers.loop_choice`); `saved_model:keras-loops` (`--keras-loops`) the same export with the
  bi-LSTMs on Keras's loops (`model.lstm_loop = "keras"`: before/after packing); `saved_model:packed-loops`
  (`--packed-loops`) with the packed loop at every batch size (`model.lstm_loop = "packed"`: before/after
  TensorFlow's LSTM kernel for one pair); `saved_model:kernel-design` (`--kernel-design`) with one pair's
  bi-LSTMs on TensorFlow's LSTM kernel instead of the step loop (`zoo.layers.tensorflow_lstm.DESIGN`);
  `saved_model:whole` exported with
  `--chunk-size 0` (`--whole-batches`: each batch whole, padded to its longest sentences);
  `saved_model+xla` exported with `--xla-max-batch N` (small batches through XLA);
- `keras`: the Keras model from token ids through `model.predict_on_batch` (Keras's own inference, what
  `evaluate` / `predict` of a run and the dev pass during training run; no tokenization);
- `tflite:none`, `tflite:dynamic-range`, `tflite:float16`: the LiteRT interpreter on token ids padded to
  the preset's fixed length (100), at its fixed batch size (a batch-1 model for latency, a batch-32 model
  for throughput; 256 pairs are 8 invocations);
- `torch`: with `--torch-reference DIR` (a checkout of github.com/coetaur0/ESIM, the folder holding
  `esim/`), its `ESIM` in eval mode on the same token ids (packed sequences, lengths as CPU tensors),
  run by `--torch-python` (a separate environment with PyTorch; the zoo never depends on it). ESIM only.

Each configuration runs in a fresh subprocess with the thread settings applied before anything runs
(TensorFlow: `tf.config.threading.set_intra_op_parallelism_threads` / `set_inter_op_parallelism_threads`;
LiteRT: the interpreter's `num_threads`; PyTorch: `torch.set_num_threads` / `set_num_interop_threads`),
on one thread and on all cores (`--threads`; `inter:all` adds TensorFlow with one intra-op thread and an
inter-op thread per core, the layout docs/serving.md recommends for TF Serving on a CPU). A subprocess makes one pass over the pairs to warm up, then measures:
batch-1 latency (p50 and p99 over `--latency-pairs` pairs, one call each) and throughput at batch 32
and 256 (pairs/s over `--pairs` pairs in their order, batches padded to their longest sentences).
`--rounds R` repeats every subprocess R times; the table shows the median and, in brackets, the range.
`--profile` instead traces the SavedModel's `serving_default` with the TensorFlow profiler at
`--profile-batch` pairs (on each thread setting) and prints where the time goes: by op type, by part of
the graph (tokenization and lookup, each recurrent layer, the rest) and the executor's share.
`b32 CPU ms/pair` is the CPU time of every thread of the subprocess per pair at batch 32 and `b1 CPU ms`
the median CPU time of one batch-1 call (on a machine shared with other jobs, the work done whatever the
waiting; PyTorch's waiting threads spin, which counts, so on several threads its CPU time overstates it).
`peak MB` is the subprocess's peak resident memory, `size MB` the model on disk (SavedModel version
folder, `.tflite` file, Keras weights file, PyTorch parameters).

The pairs: the shipped SNLI rows (`zoo/data/sample`, 1,289 pairs) or `--data` (a folder of
premise.txt / hypothesis.txt / label.txt, one tokenized pair a line, or an SNLI .jsonl file).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

DEFAULT_MODELS = ("rocktaschel_wbw", "mlstm", "esim")
QUANTIZATIONS = ("none", "dynamic-range", "float16")
THROUGHPUT_BATCHES = (32, 256)
TFLITE_BATCHES = (1, 32)  # latency model, throughput model
RESULT_MARK = "BENCHMARK_RESULT "

import machine  # noqa: E402  (scripts/machine.py: standard library only at import)


# Pairs -----------------------------------------------------------------------------------------------
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


# Artifacts (built once in --work-dir) ------------------------------------------------------------------
def make_run(run_dir, model_name, pairs, vocabulary_size, embedding_dim, seed=0):
    """A run directory of `model_name` at its paper size with random weights and a `vocabulary_size`
    vocabulary (the pairs' words, then filler words), written by the library as training writes a run
    (`zoo.training.untrained.write_untrained_run`)."""
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary
    from zoo.training.config import RunConfig
    from zoo.training.untrained import write_untrained_run

    config = RunConfig.create(model=model_name, dataset="snli_sample", embeddings="none", seed=seed,
                              embedding_dim=embedding_dim, run_dir=run_dir)
    tokenizer = Tokenizer(lowercase=config.data.lowercase)
    vocab = Vocabulary.build(tokenizer.tokenize_batch([s for pair in pairs for s in pair]),
                             max_size=vocabulary_size)
    vocab = vocab.extended(f"filler{i:05d}" for i in range(vocabulary_size - len(vocab)))
    return write_untrained_run(config, vocab)


def build_artifacts(args, model_name, pairs):
    """The run, SavedModel(s) and TFLite variants of one model under `--work-dir/MODEL` (reused when there)."""
    import zoo
    from zoo.export import export_saved_model
    from zoo.export.tflite import export_tflite

    root = os.path.join(args.work_dir, model_name)
    run_dir = os.path.join(root, "run")
    if not os.path.exists(os.path.join(run_dir, "best.weights.h5")):
        log(f"{model_name}: building a paper-size run with random weights")
        make_run(run_dir, model_name, pairs, args.vocabulary, args.embedding_dim)
    run = None
    artifacts = {"run": run_dir}
    from zoo.export.saved_model import DEFAULT_CHUNK_SIZE

    chunk = DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    wanted = [("saved_model", 0, chunk)]
    wanted += [("saved_model:whole", 0, 0)] if args.whole_batches else []
    wanted += [("saved_model+xla", args.xla_max_batch, chunk)] if args.xla_max_batch else []
    wanted += [("saved_model:keras-loops", 0, chunk)] if args.keras_loops else []
    wanted += [("saved_model:packed-loops", 0, chunk)] if args.packed_loops else []
    wanted += [("saved_model:kernel-design", 0, chunk)] if args.kernel_design else []
    for name, xla, chunk in wanted:
        model_dir = os.path.join(root, name.replace("+", "_").replace(":", "_") + f"_c{chunk}")
        if not os.path.exists(os.path.join(model_dir, "1", "saved_model.pb")):
            run = zoo.load(run_dir)  # a fresh model each: the loop asked for below stays with its export
            if name.endswith("-loops"):  # keras: the serving graph before packing; packed: before the kernel
                run.model.lstm_loop = name.split(":")[1][:-len("-loops")]  # as a user asks it (zoo.layers.loop_choice)
            log(f"{model_name}: exporting {name}")
            shutil.rmtree(model_dir, ignore_errors=True)
            from zoo.layers import tensorflow_lstm

            kept = tensorflow_lstm.DESIGN  # read while tracing: the kernel design stays with its export
            tensorflow_lstm.DESIGN = "kernel" if name.endswith(":kernel-design") else kept
            try:
                export_saved_model(run, model_dir, 1, xla_max_batch=xla, chunk_size=chunk,
                                   batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256))
            finally:
                tensorflow_lstm.DESIGN = kept
        artifacts[name] = os.path.join(model_dir, "1")
    for quantize in args.quantize:
        for batch in TFLITE_BATCHES:
            out = os.path.join(root, f"tflite_{quantize}_b{batch}")
            if not os.path.exists(os.path.join(out, "model.tflite")):
                run = run or zoo.load(run_dir)
                log(f"{model_name}: converting TFLite {quantize} at batch {batch}")
                started = time.time()
                export_tflite(run, out, batch_size=batch, quantize=quantize, overwrite=True)
                log(f"{model_name}: converted in {time.time() - started:.0f} s")
            artifacts[f"tflite:{quantize}:b{batch}"] = out
    return artifacts


def disk_size(path):
    """Bytes of a file or of everything under a folder."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


# Measuring (in a fresh subprocess) ---------------------------------------------------------------------
def batches(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def measure(call, latency_inputs, throughput_inputs):
    """Latency of `call` on each batch-1 input and throughput over each list of batches.

    Args:
        call: runs one prepared batch to completion.
        latency_inputs: prepared batch-1 inputs.
        throughput_inputs: `{batch size: [(prepared batch, pairs in it), ...]}`.
    """
    for item in latency_inputs:  # warm-up pass
        call(item)
    for items in throughput_inputs.values():
        for item, _ in items:
            call(item)
    latencies, cpu_times = [], []
    for item in latency_inputs:
        started, cpu = time.perf_counter(), time.process_time()
        call(item)
        latencies.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu)
    result = {"p50_ms": 1e3 * percentile(latencies, 50), "p99_ms": 1e3 * percentile(latencies, 99),
              "b1_cpu_ms": 1e3 * percentile(cpu_times, 50)}
    for size, items in throughput_inputs.items():
        started, cpu = time.perf_counter(), time.process_time()
        for item, _ in items:
            call(item)
        pairs = sum(n for _, n in items)
        result[f"b{size}_pairs_per_s"] = pairs / (time.perf_counter() - started)
        # CPU seconds of every thread of the process: on a shared machine, the work done, whatever the wait
        result[f"b{size}_cpu_ms_per_pair"] = 1e3 * (time.process_time() - cpu) / pairs
    return result


def peak_rss_mb():
    """The process's peak resident memory (VmHWM: per process image, unlike ru_maxrss, which Linux carries
    over from the parent across fork and exec)."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def set_tf_threads(threads, intra=None):
    """TensorFlow's pools: `threads` inter-op threads and `intra` (default: as many) intra-op threads."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(intra or threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


def thread_setting(text, cores):
    """A `--threads` entry as `{"label", "threads", "intra"}`: `N` or `all` (N threads in each of
    TensorFlow's pools, its own layout; N threads for LiteRT and PyTorch), `inter:N` or `inter:all` (N
    inter-op threads, each op on one intra-op thread: independent ops, such as the premise's and the
    hypothesis's loops, run side by side instead of each small product being split; TensorFlow only, TF
    Serving's `--tensorflow_intra_op_parallelism=1 --tensorflow_inter_op_parallelism=N`)."""
    inter = text.startswith("inter:")
    count = text.split(":", 1)[1] if inter else text
    threads = cores if count == "all" else int(count)
    return {"label": f"inter:{threads}" if inter else str(threads), "threads": threads, "intra": 1 if inter else threads}


def child(spec):
    """Measures one configuration (`spec`: the JSON of `--child`) and prints its result line."""
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
    print(RESULT_MARK + json.dumps(result), flush=True)


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
    print(RESULT_MARK + json.dumps({"wall_s": wall, "pairs": len(pairs), "by_type": dict(by_type),
                                    "by_part": dict(by_part)}), flush=True)


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


def print_profile(model_name, threads, batch, result):
    wall = result["wall_s"]
    busy = sum(result["by_type"].values())
    print(f"\n{model_name}, serving_default at batch {batch}, {threads} thread(s): {result['pairs'] / wall:.0f} pairs/s; "
          f"ops busy {busy:.3f} s of {wall:.3f} s wall ({100 * busy / wall:.0f}%; with several threads ops overlap)")
    for title, table in (("by op type", result["by_type"]), ("by part of the graph", result["by_part"])):
        print(f"  {title}:")
        for name, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:12]:
            print(f"    {name:<48} {1e3 * seconds:9.1f} ms  {100 * seconds / busy:5.1f}%")


TORCH_CHILD = r'''
import json, sys
spec = json.loads(sys.argv[1])
import numpy as np
import torch
torch.set_num_threads(spec["threads"])
torch.set_num_interop_threads(spec["threads"])
sys.path.insert(0, spec["reference"])
sys.path.insert(0, spec["scripts"])
from esim.model import ESIM  # the reference implementation, imported from its checkout
from benchmark_serving import THROUGHPUT_BATCHES, measure, peak_rss_mb  # standard library only at import

torch.manual_seed(0)
model = ESIM(spec["vocabulary"], spec["embedding_dim"], spec["hidden_size"], dropout=0.5).eval()
data = np.load(spec["ids"])

def prepare(start, stop):
    tensors = []
    for side in ("premise", "hypothesis"):
        lengths = np.maximum(data[side + "_lengths"][start:stop], 1)
        ids = data[side][start:stop, :lengths.max()]
        # lengths stay a CPU int64 tensor: pack_padded_sequence requires it on PyTorch >= 1.7
        tensors += [torch.from_numpy(np.ascontiguousarray(ids)).long(), torch.from_numpy(lengths).long().cpu()]
    return tensors[0], tensors[1], tensors[2], tensors[3]

def call(args):
    with torch.inference_mode():
        model(*args)

n = len(data["premise"])
result = measure(call, [prepare(i, i + 1) for i in range(spec["latency_pairs"])],
                 {size: [(prepare(s, min(s + size, n)), min(s + size, n) - s) for s in range(0, n, size)]
                  for size in THROUGHPUT_BATCHES})
result["peak_mb"] = peak_rss_mb()
result["size_bytes"] = 4 * sum(p.numel() for p in model.parameters())
print("BENCHMARK_RESULT " + json.dumps(result), flush=True)
'''


def torch_inputs(args, run_dir, pairs, path):
    """Writes the pairs' token ids (the run's vocabulary and tokenizer, truncated as the run does) for the
    PyTorch child: `premise`, `hypothesis` int64 `[N, L]` right-padded with 0, and their lengths."""
    import numpy as np

    import zoo
    from zoo import fileio

    run = zoo.load(run_dir)
    ids = run.encode(pairs)
    arrays = {}
    for side in ("premise", "hypothesis"):
        arrays[side] = ids[side].astype(np.int64)
        arrays[side + "_lengths"] = (ids[side] != 0).sum(axis=1).astype(np.int64)
    with fileio.atomic_path(path) as tmp:
        np.savez(tmp, **arrays)
    return path


def run_child(command, env=None):
    """Runs a measuring subprocess; returns its result dict (or `{"error": ...}`)."""
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    for line in result.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    return {"error": (result.stderr.strip().splitlines() or ["no output"])[-1][:300]}


# Report ---------------------------------------------------------------------------------------------------
COLUMNS = (("p50_ms", "b1 p50 ms", "{:.2f}"), ("p99_ms", "b1 p99 ms", "{:.2f}"), ("b1_cpu_ms", "b1 CPU ms", "{:.2f}"),
           ("b32_pairs_per_s", "b32 pairs/s", "{:.0f}"), ("b256_pairs_per_s", "b256 pairs/s", "{:.0f}"),
           ("b32_cpu_ms_per_pair", "b32 CPU ms/pair", "{:.2f}"),
           ("peak_mb", "peak MB", "{:.0f}"))


def summarize(rounds):
    """Median and range of each column over the rounds that succeeded."""
    good = [r for r in rounds if "error" not in r]
    if not good:
        return {"error": rounds[0].get("error", "failed")}
    out = {}
    for key, _, _ in COLUMNS:
        values = [r[key] for r in good]
        out[key] = (statistics.median(values), min(values), max(values))
    return out


def format_row(model, variant, threads, size_bytes, summary, markdown, share=None):
    cells = [model, variant, str(threads), f"{size_bytes / 1e6:.1f}"]
    if "error" in summary:
        cells += ["error: " + summary["error"]] + [""] * (len(COLUMNS) - 1)
    else:
        for key, _, fmt in COLUMNS:
            median, low, high = summary[key]
            cell = fmt.format(median)
            if high > low and key != "peak_mb":
                cell += f" ({fmt.format(low)}-{fmt.format(high)})"
            cells.append(cell)
    cells.append("-" if share is None else f"{100 * share:.1f}%")
    return ("| " + " | ".join(cells) + " |") if markdown else "  ".join(f"{c:<22}" if i > 3 else f"{c:<16}"
                                                                          for i, c in enumerate(cells))


def header(markdown):
    names = ["model", "variant", "threads", "size MB"] + [title for _, title, _ in COLUMNS] + ["b32 % GEMM peak"]
    if markdown:
        return "| " + " | ".join(names) + " |\n|" + "---|" * len(names)
    return "  ".join(f"{c:<22}" if i > 3 else f"{c:<16}" for i, c in enumerate(names))


def configuration(args, model_name, variant, setting, artifacts, pairs):
    """One measured configuration (`setting`: `thread_setting`'s): its subprocess command and the model's
    size on disk (None: reported by the subprocess)."""
    spec = {"data": args.data, "pairs": args.pairs, "latency_pairs": args.latency_pairs,
            "threads": setting["threads"], "intra": setting["intra"], "kind": variant}
    own = [sys.executable, os.path.abspath(__file__), "--child"]
    if variant == "torch":
        import zoo

        preset = zoo.get_preset(model_name)["model"]
        spec.update(reference=os.path.abspath(args.torch_reference), scripts=os.path.dirname(os.path.abspath(__file__)),
                    vocabulary=args.vocabulary,
                    embedding_dim=args.embedding_dim, hidden_size=preset["hidden_size"],
                    ids=torch_inputs(args, artifacts["run"], pairs[:args.pairs],
                                     os.path.join(args.work_dir, model_name, "torch_ids.npz")))
        command, size = [args.torch_python, "-c", TORCH_CHILD, json.dumps(spec)], None
    elif variant.startswith("tflite"):
        quantize = variant.split(":")[1]
        spec["path"] = {f"b{b}": artifacts[f"tflite:{quantize}:b{b}"] for b in TFLITE_BATCHES}
        command, size = own + [json.dumps(spec)], disk_size(os.path.join(spec["path"]["b1"], "model.tflite"))
    elif variant == "keras":
        spec["path"] = artifacts["run"]
        command, size = own + [json.dumps(spec)], disk_size(os.path.join(artifacts["run"], "best.weights.h5"))
    else:
        spec["path"] = artifacts[variant]
        command, size = own + [json.dumps(spec)], disk_size(artifacts[variant])
    return {"model": model_name, "variant": variant, "threads": setting["label"], "cores": setting["threads"],
            "command": command, "size_bytes": size, "rounds": []}


def log(message):
    print(f"[benchmark] {message}", file=sys.stderr, flush=True)


def build_parser():
    parser = argparse.ArgumentParser(description="Serving speed of exported models on a CPU.")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--variants", nargs="+", default=None,
                        help="saved_model, saved_model+xla, keras, tflite:none, tflite:dynamic-range, "
                             "tflite:float16, torch (default: all that apply)")
    parser.add_argument("--data", default=None, help="pairs: an SNLI .jsonl file or a premise/hypothesis.txt folder")
    parser.add_argument("--pairs", type=int, default=1024, help="pairs of each throughput pass (default 1024)")
    parser.add_argument("--latency-pairs", type=int, default=200, help="batch-1 calls of the latency pass")
    parser.add_argument("--threads", default="1,all",
                        help="thread settings, e.g. 1,all or 1,2,4; inter:all or inter:N: N inter-op threads of "
                             "one intra-op thread each (TensorFlow only) (default 1,all)")
    parser.add_argument("--rounds", type=int, default=1, help="fresh subprocesses per configuration (default 1)")
    parser.add_argument("--vocabulary", type=int, default=40000)
    parser.add_argument("--embedding-dim", type=int, default=300)
    parser.add_argument("--quantize", nargs="+", default=list(QUANTIZATIONS), choices=QUANTIZATIONS,
                        help="TFLite variants to build and measure")
    parser.add_argument("--xla-max-batch", type=int, default=0,
                        help="also measure the SavedModel exported with --xla-max-batch N")
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="export the SavedModels with --chunk-size N (default: export.py's, 32)")
    parser.add_argument("--keras-loops", action="store_true",
                        help="also measure the SavedModel exported with Keras's bi-LSTM loops (no packing: before/after)")
    parser.add_argument("--packed-loops", action="store_true",
                        help="also measure the SavedModel exported with the packed bi-LSTM loop at every batch size "
                             "(before/after TensorFlow's LSTM kernel for one pair)")
    parser.add_argument("--kernel-design", action="store_true",
                        help="also measure the SavedModel exported with one pair's bi-LSTMs on TensorFlow's LSTM "
                             "kernel (zoo.layers.tensorflow_lstm's \"kernel\" design) instead of the step loop")
    parser.add_argument("--gemm-seconds", type=float, default=1.0,
                        help="seconds per shape of the machine's GEMM peak measurement (0: skip it)")
    parser.add_argument("--whole-batches", action="store_true",
                        help="also measure the SavedModel exported with --chunk-size 0 (whole batches)")
    parser.add_argument("--torch-reference", default=None, help="a checkout of github.com/coetaur0/ESIM (ESIM only)")
    parser.add_argument("--torch-python", default=None, help="the python of an environment with PyTorch")
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "nli_zoo_benchmark_serving"),
                        help="where the runs and exports are built (reused by later runs)")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--json", default=None, help="also write every round's figures to this file")
    parser.add_argument("--profile", action="store_true",
                        help="profile the SavedModel of each model instead of measuring the variants")
    parser.add_argument("--profile-batch", type=int, default=32, help="--profile: pairs per call (default 32)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", default=None, help=argparse.SUPPRESS)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return None
    if args.profile_child:
        profile_child(json.loads(args.profile_child))
        return None
    if args.torch_reference and not args.torch_python:
        raise SystemExit("benchmark_serving.py: error: --torch-reference needs --torch-python")
    cores = machine.cpu()["cores"] or 1
    try:
        settings = {s["label"]: s for s in (thread_setting(t, cores) for t in args.threads.split(","))}
    except ValueError:
        raise SystemExit(f"benchmark_serving.py: error: --threads {args.threads!r}: give numbers, all, inter:N "
                         "or inter:all, separated by commas") from None
    thread_settings = sorted(settings.values(), key=lambda s: (s["threads"], -s["intra"]))
    info = machine.describe(args.gemm_seconds, sorted({s["threads"] for s in thread_settings}))
    print("\n".join(machine.lines(info)), flush=True)
    pairs = read_pairs(args.data)
    if args.profile or (args.variants and not any(v.startswith("tflite") for v in args.variants)):
        args.quantize = []  # no TFLite variant to measure: no TFLite conversions to wait for
    os.makedirs(args.work_dir, exist_ok=True)
    configs = []
    for model_name in args.models:
        artifacts = build_artifacts(args, model_name, pairs)
        if args.profile:
            for setting in thread_settings:
                threads = setting["label"]
                spec = {"data": args.data, "pairs": args.pairs, "threads": setting["threads"],
                        "intra": setting["intra"], "batch": args.profile_batch, "path": artifacts["saved_model"]}
                result = run_child([sys.executable, os.path.abspath(__file__), "--profile-child", json.dumps(spec)])
                if "error" in result:
                    print(f"{model_name}: profile failed: {result['error']}")
                else:
                    print_profile(model_name, threads, args.profile_batch, result)
            continue
        variants = [name for name in artifacts if name.startswith("saved_model")] + ["keras"]
        variants += [f"tflite:{q}" for q in args.quantize]
        if args.torch_reference and model_name == "esim":
            variants.append("torch")
        if args.variants:
            variants = [v for v in variants if v in args.variants]
        for variant in variants:
            for setting in thread_settings:
                if setting["intra"] != setting["threads"] and not variant.startswith(("saved_model", "keras")):
                    continue  # inter:N is a TensorFlow layout: LiteRT and PyTorch have one pool
                configs.append(configuration(args, model_name, variant, setting, artifacts, pairs))
    if args.profile:
        return None
    # Rounds go over every configuration in turn, so that each sees the same spells of a shared machine.
    for number in range(args.rounds):
        for config in configs:
            log(f"{config['model']} {config['variant']} threads={config['threads']} round {number + 1}/{args.rounds}")
            config["rounds"].append(run_child(config["command"]))
    records, lines = [], []
    flops = {(name, folded): forward_flops(args, name, pairs, folded) for name in args.models for folded in (True, False)}
    for config in configs:
        size = config["size_bytes"]
        if size is None:
            size = next((r["size_bytes"] for r in config["rounds"] if "size_bytes" in r), 0)
        summary = summarize(config["rounds"])
        peak = machine.peak_for(info, config["cores"])
        work = flops[config["model"], config["variant"] != "torch"]  # each side's products as it computes them
        share = (summary["b32_pairs_per_s"][0] * work / (peak * 1e9)
                 if work and peak and "error" not in summary else None)
        records.append({"model": config["model"], "variant": config["variant"], "threads": config["threads"],
                        "size_bytes": size, "rounds": config["rounds"], "b32_gemm_peak_share": share})
        lines.append(format_row(config["model"], config["variant"], config["threads"], size, summary, args.markdown,
                                share))
    described = (f"{machine.cpu_label(info)}; peak fp32 GEMM (TensorFlow MatMul) " + ", ".join(
        f"{t} thread(s) {p:.0f} GFLOP/s" for t, p in info["peak_gflops"].items()) +
        f"; Python {platform.python_version()}, {args.rounds} round(s) per configuration")
    print(f"# {described}; pairs: {args.data or 'zoo/data/sample (shipped SNLI rows)'}")
    print(header(args.markdown))
    print("\n".join(lines))
    if args.json:
        from zoo.fileio import write_json

        write_json(args.json, {"machine": info, "records": records,
                               "forward_flops_per_pair": {name: flops[name, True] for name in args.models},
                               "reference_forward_flops_per_pair": {name: flops[name, False] for name in args.models}})
    return records


def forward_flops(args, model_name, pairs, folded=True):
    """ESIM's forward FLOPs per pair on the real tokens of the measured pairs (`machine.esim_flops`: the zoo's
    folded F, or the reference's whole one), else None."""
    if model_name != "esim":
        return None
    import numpy as np

    import zoo

    run = zoo.load(os.path.join(args.work_dir, model_name, "run"))
    ids = run.encode(pairs[:args.pairs])
    lengths = [(ids[k] != 0).sum(axis=1) for k in ("premise", "hypothesis")]
    hidden = run.settings.model["hidden_size"]
    return float(np.mean([machine.esim_flops(p, h, hidden, args.embedding_dim, folded) for p, h in zip(*lengths)]))


if __name__ == "__main__":
    main()
