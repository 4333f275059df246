"""Training speed (pairs/s) of several models side by side on the same data, in one process.

Chen et al. (2017) report 6 hours for ESIM and 40 for the tree models; this prints what the zoo's
implementations do on the machine at hand. Each model first trains one warm-up epoch (graph tracing,
and for the syntactic model its level loop, happen there), then `--epochs` timed epochs.

    python scripts/benchmark_training.py [--models esim esim_tree syntactic_tree_lstm] \\
        [--hidden-size 100] [--batch-size 32] [--epochs 2] [--max-train-examples 512]

Data: the SNLI rows shipped in zoo/data/sample (with their binary parses), or `--data-dir` (an
snli_1.0 folder or zip). Word vectors: random (speed does not depend on them).
"""

import argparse
import os
import platform
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dataset_for(name, examples, vocab, tokenizer, preset, batch_size):
    from zoo.data.pipeline import make_dataset
    from zoo.data.trees import make_tree_dataset

    data = preset["data"]
    common = dict(max_premise_length=data["max_premise_length"],
                  max_hypothesis_length=data["max_hypothesis_length"], shuffle=False)
    if preset["model"].get("trees") == "syntactic":
        return make_tree_dataset(examples, vocab, tokenizer, batch_size, trees="syntactic", on_error="complete",
                                 max_depth=preset["model"].get("max_depth"), **common)
    return make_dataset(examples, vocab, tokenizer, batch_size, **common)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["esim", "esim_tree", "syntactic_tree_lstm"])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--hidden-size", type=int, default=100)
    parser.add_argument("--embedding-dim", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-train-examples", type=int, default=512)
    args = parser.parse_args()

    import keras

    import zoo
    from zoo.data.snli import load_snli
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    splits, _ = load_snli(args.data_dir or "snli_sample")
    examples = splits["train"][:args.max_train_examples]
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, {platform.platform()}; "
          f"keras {keras.__version__} ({keras.backend.backend()}); {len(examples)} training pairs, "
          f"batch {args.batch_size}, hidden {args.hidden_size}")
    print(f"{'model':24s} {'warm-up epoch s':>16s} {'timed epochs s':>15s} {'pairs/s':>9s}")
    for name in args.models:
        preset = zoo.get_preset(name)
        tokenizer = Tokenizer(lowercase=preset["data"]["lowercase"])
        vocab = Vocabulary.build(tokenizer.tokenize_batch(
            [e[k] for e in examples for k in ("premise", "hypothesis")]))
        keras.utils.set_random_seed(0)
        model = zoo.create_model(name, vocabulary_size=len(vocab), embedding_dim=args.embedding_dim,
                                 tunable_words="all", hidden_size=args.hidden_size)
        model.compile(optimizer=keras.optimizers.Adam(preset["train"]["learning_rate"]),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        ds = dataset_for(name, examples, vocab, tokenizer, preset, args.batch_size)
        started = time.time()
        model.fit(ds, epochs=1, verbose=0)
        warm = time.time() - started
        started = time.time()
        model.fit(ds, epochs=args.epochs, verbose=0)
        timed = time.time() - started
        print(f"{name:24s} {warm:16.1f} {timed:15.1f} {args.epochs * len(examples) / timed:9.1f}", flush=True)


if __name__ == "__main__":
    main()
