"""Serving speed on a CPU: the exported SavedModel, the Keras model, the TFLite variants (and, optionally,
the PyTorch reference ESIM), each model at its paper size with random weights.

    python scripts/benchmark_serving.py                                   # rocktaschel_wbw, mlstm, esim
    python scripts/benchmark_serving.py --models esim --rounds 3 --xla-max-batch 8 \\
        --torch-reference ESIM --torch-python /work/torchenv/bin/python
    python scripts/benchmark_serving.py --data ../shared/data/snli_1.0_dev_tokens --markdown
    python scripts/benchmark_serving.py --models esim ... --record   # append to results/serving/<machine id>.jsonl

The machine comes first (`zoo.measurements.machine`: CPU model, family / model, flags, thread settings, the
fp32 GEMM peak on one thread and every core); `b32 % GEMM peak` is ESIM's useful arithmetic at batch 32
(its products on the real tokens, `zoo.measurements.machine.esim_flops`) over that peak at the same thread count.

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

Each configuration runs in a fresh subprocess (`scripts/serving_child.py`; the reference:
`scripts/reference/esim_torch_serving.py`) with the thread settings applied before anything runs
(TensorFlow: `tf.config.threading.set_intra_op_parallelism_threads` / `set_inter_op_parallelism_threads`;
LiteRT: the interpreter's `num_threads`; PyTorch: `torch.set_num_threads` / `set_num_interop_threads`),
on one thread and on all cores (`--threads`; `inter:all` adds TensorFlow with one intra-op thread and an
inter-op thread per core, the layout docs/serving.md recommends for TF Serving on a CPU). A subprocess makes
one pass over the pairs to warm up, then measures:
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

import json
import os
import platform
import statistics
import sys
import tempfile

from recording import add_record_options, reference_command, save
from serving_artifacts import TFLITE_BATCHES, build_artifacts, disk_size, forward_flops, log, torch_inputs
from serving_child import THROUGHPUT_BATCHES, read_pairs
from zoo.commands.parsing import COUNT, COUNT_OR_ZERO, FILE_TO_WRITE, SECONDS, CommandParser
from zoo.measurements import child as protocol
from zoo.measurements import machine

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SCRIPTS)
DEFAULT_MODELS = ("rocktaschel_wbw", "mlstm", "esim")
QUANTIZATIONS = ("none", "dynamic-range", "float16")


def thread_setting(text, cores):
    """A `--threads` entry as `{"label", "threads", "intra"}`: `N` or `all` (N threads in each of
    TensorFlow's pools, its own layout; N threads for LiteRT and PyTorch), `inter:N` or `inter:all` (N
    inter-op threads, each op on one intra-op thread: independent ops, such as the premise's and the
    hypothesis's loops, run side by side instead of each small product being split; TensorFlow only, TF
    Serving's `--tensorflow_intra_op_parallelism=1 --tensorflow_inter_op_parallelism=N`)."""
    inter = text.startswith("inter:")
    count = text.split(":", 1)[1] if inter else text
    threads = cores if count == "all" else int(count)
    return {"label": f"inter:{threads}" if inter else str(threads), "threads": threads,
            "intra": 1 if inter else threads}


def print_profile(model_name, threads, batch, result):
    wall = result["wall_s"]
    busy = sum(result["by_type"].values())
    print(f"\n{model_name}, serving_default at batch {batch}, {threads} thread(s): "
          f"{result['pairs'] / wall:.0f} pairs/s; ops busy {busy:.3f} s of {wall:.3f} s wall "
          f"({100 * busy / wall:.0f}%; with several threads ops overlap)")
    for title, table in (("by op type", result["by_type"]), ("by part of the graph", result["by_part"])):
        print(f"  {title}:")
        for name, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:12]:
            print(f"    {name:<48} {1e3 * seconds:9.1f} ms  {100 * seconds / busy:5.1f}%")


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
    own = [sys.executable, os.path.join(SCRIPTS, "serving_child.py"), "measure"]
    env = None
    if variant == "torch":
        import zoo

        preset = zoo.get_preset(model_name).model
        spec.update(throughput_batches=list(THROUGHPUT_BATCHES), vocabulary=args.vocabulary,
                    embedding_dim=args.embedding_dim, hidden_size=preset["hidden_size"],
                    ids=torch_inputs(args, artifacts["run"], pairs[:args.pairs],
                                     os.path.join(args.work_dir, model_name, "torch_ids.npz")))
        command, env = reference_command(args.torch_python, "esim_torch_serving.py", spec, args.torch_reference)
        size = None
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
            "command": command, "env": env, "size_bytes": size, "rounds": []}


def build_parser():
    parser = CommandParser(prog="benchmark_serving.py", description="Serving speed of exported models on a CPU.")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--variants", nargs="+", default=None,
                        help="saved_model, saved_model+xla, keras, tflite:none, tflite:dynamic-range, "
                             "tflite:float16, torch (default: all that apply)")
    parser.add_argument("--data", default=None, help="pairs: an SNLI .jsonl file or a premise/hypothesis.txt folder")
    parser.add_argument("--pairs", type=COUNT, default=1024, help="pairs of each throughput pass (default 1024)")
    parser.add_argument("--latency-pairs", type=COUNT, default=200, help="batch-1 calls of the latency pass")
    parser.add_argument("--threads", default="1,all",
                        help="thread settings, e.g. 1,all or 1,2,4; inter:all or inter:N: N inter-op threads of "
                             "one intra-op thread each (TensorFlow only) (default 1,all)")
    parser.add_argument("--rounds", type=COUNT, default=1, help="fresh subprocesses per configuration (default 1)")
    parser.add_argument("--vocabulary", type=COUNT, default=40000)
    parser.add_argument("--embedding-dim", type=COUNT, default=300)
    parser.add_argument("--quantize", nargs="+", default=list(QUANTIZATIONS), choices=QUANTIZATIONS,
                        help="TFLite variants to build and measure")
    parser.add_argument("--xla-max-batch", type=COUNT_OR_ZERO, default=0,
                        help="also measure the SavedModel exported with --xla-max-batch N")
    parser.add_argument("--chunk-size", type=COUNT_OR_ZERO, default=None,
                        help="export the SavedModels with --chunk-size N (default: export.py's, 32)")
    parser.add_argument("--keras-loops", action="store_true",
                        help="also measure the SavedModel exported with Keras's bi-LSTM loops "
                             "(no packing: before/after)")
    parser.add_argument("--packed-loops", action="store_true",
                        help="also measure the SavedModel exported with the packed bi-LSTM loop at every batch size "
                             "(before/after TensorFlow's LSTM kernel for one pair)")
    parser.add_argument("--kernel-design", action="store_true",
                        help="also measure the SavedModel exported with one pair's bi-LSTMs on TensorFlow's LSTM "
                             "kernel (zoo.layers.tensorflow_lstm's \"kernel\" design) instead of the step loop")
    parser.add_argument("--gemm-seconds", type=SECONDS, default=1.0,
                        help="seconds per shape of the machine's GEMM peak measurement (0: skip it)")
    parser.add_argument("--whole-batches", action="store_true",
                        help="also measure the SavedModel exported with --chunk-size 0 (whole batches)")
    parser.add_argument("--torch-reference", default=None, help="a checkout of github.com/coetaur0/ESIM (ESIM only)")
    parser.add_argument("--torch-python", default=None, help="the python of an environment with PyTorch")
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "nli_zoo_benchmark_serving"),
                        help="where the runs and exports are built (reused by later runs)")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    parser.add_argument("--json", type=FILE_TO_WRITE, default=None,
                        help="also write every round's figures to this file")
    parser.add_argument("--profile", action="store_true",
                        help="profile the SavedModel of each model instead of measuring the variants")
    parser.add_argument("--profile-batch", type=COUNT, default=32, help="--profile: pairs per call (default 32)")
    add_record_options(parser)
    return parser


def profile_models(args, thread_settings, pairs):
    """`--profile`: the TensorFlow profile of each model's SavedModel on each thread setting."""
    for model_name in args.models:
        artifacts = build_artifacts(args, model_name, pairs)
        for setting in thread_settings:
            spec = {"data": args.data, "pairs": args.pairs, "threads": setting["threads"],
                    "intra": setting["intra"], "batch": args.profile_batch, "path": artifacts["saved_model"]}
            result = protocol.run([sys.executable, os.path.join(SCRIPTS, "serving_child.py"), "profile",
                                   json.dumps(spec)], cwd=ROOT)
            if "error" in result:
                print(f"{model_name}: profile failed: {result['error']}")
            else:
                print_profile(model_name, setting["label"], args.profile_batch, result)


def plan(args, thread_settings, pairs):
    """Every configuration to measure: each model's variants on each thread setting that applies."""
    configs = []
    for model_name in args.models:
        artifacts = build_artifacts(args, model_name, pairs)
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
    return configs


def report(args, configs, info, pairs):
    """Prints the table; returns each configuration's record (its rounds, size and share of the GEMM peak)."""
    records, lines = [], []
    flops = {(name, folded): forward_flops(args, name, pairs, folded)
             for name in args.models for folded in (True, False)}
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
    described = (f"{machine.cpu_label(info['cpu'])}; peak fp32 GEMM (TensorFlow MatMul) " + ", ".join(
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


def figures_of(records):
    """The records' figures as `{MODEL/VARIANT/THREADS/FIGURE: [one value a round]}` (zoo.measurements.record)."""
    figures = {}
    for record in records:
        good = [r for r in record["rounds"] if "error" not in r]
        prefix = f"{record['model']}/{record['variant']}/{record['threads']}"
        for key, _, _ in COLUMNS:
            figures[f"{prefix}/{key}"] = [r[key] for r in good if key in r]
        if record["b32_gemm_peak_share"] is not None:
            figures[f"{prefix}/b32_gemm_peak_share"] = [record["b32_gemm_peak_share"]]
    return {name: values for name, values in figures.items() if values}


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.torch_reference and not args.torch_python:
        parser.error("--torch-reference needs --torch-python")
    cores = machine.cpu()["cores"] or 1
    try:
        settings = {s["label"]: s for s in (thread_setting(t, cores) for t in args.threads.split(","))}
    except ValueError:
        parser.error(f"argument --threads: {args.threads!r}: give numbers, all, inter:N or inter:all, separated by "
                     "commas")
    thread_settings = sorted(settings.values(), key=lambda s: (s["threads"], -s["intra"]))
    info = machine.describe(args.gemm_seconds, sorted({s["threads"] for s in thread_settings}))
    print("\n".join(machine.lines(info)), flush=True)
    pairs = read_pairs(args.data)
    if args.profile or (args.variants and not any(v.startswith("tflite") for v in args.variants)):
        args.quantize = []  # no TFLite variant to measure: no TFLite conversions to wait for
    os.makedirs(args.work_dir, exist_ok=True)
    if args.profile:
        profile_models(args, thread_settings, pairs)
        return None
    configs = plan(args, thread_settings, pairs)
    # Rounds go over every configuration in turn, so that each sees the same spells of a shared machine.
    for number in range(args.rounds):
        for config in configs:
            log(f"{config['model']} {config['variant']} threads={config['threads']} round {number + 1}/{args.rounds}")
            config["rounds"].append(protocol.run(config["command"], env=config["env"], cwd=ROOT))
    records = report(args, configs, info, pairs)
    torch = next((r["torch"] for c in configs for r in c["rounds"] if "torch" in r), None)
    save(args, "serving", figures_of(records), info, extra_versions={"torch": torch} if torch else None)
    return records


if __name__ == "__main__":
    main()
