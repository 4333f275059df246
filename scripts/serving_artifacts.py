"""What scripts/benchmark_serving.py measures, built once under `--work-dir/MODEL`: a paper-size run with
random weights (written by the library as training writes a run), its SavedModel exports and TFLite
variants, and the token ids the PyTorch reference reads; ESIM's forward FLOPs on the pairs' real tokens.
"""

import os
import shutil
import sys
import time

from zoo.measurements.machine import esim_flops

TFLITE_BATCHES = (1, 32)  # latency model, throughput model


def log(message):
    print(f"[benchmark] {message}", file=sys.stderr, flush=True)


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
    from zoo.layers.loop_choice import DEFAULT_DESIGN

    chunk = DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size
    wanted = [("saved_model", 0, chunk)]
    wanted += [("saved_model:whole", 0, 0)] if args.whole_batches else []
    wanted += [("saved_model+xla", args.xla_max_batch, chunk)] if args.xla_max_batch else []
    wanted += [("saved_model:keras-loops", 0, chunk)] if args.keras_loops else []
    wanted += [("saved_model:packed-loops", 0, chunk)] if args.packed_loops else []
    wanted += [("saved_model:kernel-design", 0, chunk)] if args.kernel_design else []
    if args.variants and not args.profile:  # only the exports asked for (none for Keras or LiteRT alone)
        wanted = [w for w in wanted if w[0] in args.variants]
    for name, xla, chunk in wanted:
        model_dir = os.path.join(root, name.replace("+", "_").replace(":", "_") + f"_c{chunk}")
        if not os.path.exists(os.path.join(model_dir, "1", "saved_model.pb")):
            run = zoo.load(run_dir)  # a fresh model each: the loop asked for below stays with its export
            if name.endswith("-loops"):  # keras: the serving graph before packing; packed: before the kernel
                run.model.lstm_loop = name.split(":")[1][:-len("-loops")]  # as a user asks it (zoo.layers.loop_choice)
            log(f"{model_name}: exporting {name}")
            shutil.rmtree(model_dir, ignore_errors=True)
            # the design asked for, not this machine's tuned one: the figures name what they measured
            export_saved_model(run, model_dir, 1, xla_max_batch=xla, chunk_size=chunk,
                               batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256),
                               loop="kernel" if name.endswith(":kernel-design") else DEFAULT_DESIGN)
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


def forward_flops(args, model_name, pairs, folded=True):
    """ESIM's forward FLOPs per pair on the real tokens of the measured pairs (`esim_flops`: the zoo's
    folded F, or the reference's whole one), else None."""
    if model_name != "esim":
        return None
    import numpy as np

    import zoo

    run = zoo.load(os.path.join(args.work_dir, model_name, "run"))
    ids = run.encode(pairs[:args.pairs])
    lengths = [(ids[k] != 0).sum(axis=1) for k in ("premise", "hypothesis")]
    hidden = run.settings.model["hidden_size"]
    return float(np.mean([esim_flops(p, h, hidden, args.embedding_dim, folded) for p, h in zip(*lengths)]))
