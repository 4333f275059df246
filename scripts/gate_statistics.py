"""Wang & Jiang (2016) §3.3 gate statistics of a trained match-LSTM run.

The paper reports, over the test set:
- the mean input gate of stop words (0.287 ± 0.084) vs content words (0.347 ± 0.116), and of "not"
  (0.444 ± 0.104);
- the mean forget gate per gold label: entailment 0.446 ± 0.123, neutral 0.507 ± 0.148,
  contradiction 0.536 ± 0.170.

Here a word's gate value is its gate vector averaged over the d dimensions; the ± is the standard
deviation over word occurrences (input gate) and over hypotheses (forget gate: each hypothesis' mean over
its real words). The paper does not say which stop-word list it used; `STOP_WORDS` below is NLTK's
English stop-word list (nltk_data `corpora/stopwords/english`, 179 words), which keeps "not" among the
stop words as the paper does.

Usage:
    python scripts/gate_statistics.py --run-dir runs/mlstm [--jsonl snli_1.0_test.jsonl | --dataset snli_sample]
        [--split test] [--max-pairs N] [--json OUT]
"""

import argparse
import json
import sys

import numpy as np


from zoo.commands.parsing import CommandParser
import zoo  # noqa: E402 (after the path set-up above)
from zoo.data import LABELS  # noqa: E402
from zoo.data.corpora import load_corpus  # noqa: E402
from zoo.data.pipeline import encode_pairs  # noqa: E402

# NLTK's English stop words (nltk_data corpora/stopwords/english).
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him
his himself she she's her hers herself it it's its itself they them their theirs themselves what which who
whom this that that'll these those am is are was were be been being have has had having do does did doing
a an the and but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here there when
where why how all any both each few more most other some such no nor not only own same so than too very s t
can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn
needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split())
GATES = ("input_gate", "forget_gate", "output_gate")


def _mean_std(values):
    values = np.asarray(values, dtype="float64")
    if values.size == 0:
        return {"mean": None, "std": None, "count": 0}
    return {"mean": float(values.mean()), "std": float(values.std()), "count": int(values.size)}


def gate_statistics(model, vocab, tokenizer, examples, max_premise_length=None, max_hypothesis_length=None,
                    batch_size=128):
    """The §3.3 statistics of `model` (any model whose `explain()` returns the mLSTM gates).

    Args:
        model: an `NLIModel` returning `input_gate` / `forget_gate` `[B, Lh, d]` from `explain()`.
        vocab, tokenizer: those of the run.
        examples: `[{"premise": str, "hypothesis": str, "label": int}]`.
        max_premise_length, max_hypothesis_length: the run's truncation.

    Returns:
        `{"input_gate": {"stop_words", "content_words", "not"}, "forget_gate": {label: ...},
        "pairs": N}`, each entry `{"mean", "std", "count"}`.
    """
    stop, content, negation = [], [], []
    forget = {label: [] for label in LABELS}
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        inputs = encode_pairs([(e["premise"], e["hypothesis"]) for e in chunk], vocab, tokenizer,
                              max_premise_length=max_premise_length, max_hypothesis_length=max_hypothesis_length)
        out = model.explain(inputs)
        missing = [g for g in GATES[:2] if g not in out]
        if missing:
            raise ValueError(f"the model's explain() gives no {', '.join(missing)}: not a match-LSTM")
        input_gate = np.asarray(out["input_gate"], "float32").mean(-1)     # [B, Lh]
        forget_gate = np.asarray(out["forget_gate"], "float32").mean(-1)   # [B, Lh]
        for i, example in enumerate(chunk):
            length = int(np.count_nonzero(inputs["hypothesis"][i]))
            tokens = tokenizer.tokenize(example["hypothesis"])[:length]
            for k, token in enumerate(tokens):
                word = token.lower()
                (stop if word in STOP_WORDS else content).append(input_gate[i, k])
                if word == "not" or word == "n't":
                    negation.append(input_gate[i, k])
            if length:
                forget[LABELS[example["label"]]].append(forget_gate[i, :length].mean())
    return {"pairs": len(examples),
            "input_gate": {"stop_words": _mean_std(stop), "content_words": _mean_std(content),
                           "not": _mean_std(negation)},
            "forget_gate": {label: _mean_std(values) for label, values in forget.items()}}


def format_report(stats):
    """Readable lines, with the paper's figures beside ours."""
    paper_input = {"stop_words": "0.287 ± 0.084", "content_words": "0.347 ± 0.116", "not": "0.444 ± 0.104"}
    paper_forget = {"entailment": "0.446 ± 0.123", "neutral": "0.507 ± 0.148", "contradiction": "0.536 ± 0.170"}

    def cell(s):
        return "n/a" if s["mean"] is None else f"{s['mean']:.3f} ± {s['std']:.3f} (n={s['count']})"

    lines = [f"pairs: {stats['pairs']}", "mean input gate         ours                      paper"]
    for key, paper in paper_input.items():
        lines.append(f"  {key:<20}  {cell(stats['input_gate'][key]):<24}  {paper}")
    lines.append("mean forget gate by gold label")
    for key, paper in paper_forget.items():
        lines.append(f"  {key:<20}  {cell(stats['forget_gate'][key]):<24}  {paper}")
    return "\n".join(lines)


def main(argv=None):
    parser = CommandParser(prog="gate_statistics.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True, help="a training run of an mlstm* model")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--jsonl", help="an NLI file in SNLI's fields (e.g. snli_1.0_test.jsonl; any file "
                        "`zoo.data.corpora.load_corpus` reads)")
    source.add_argument("--dataset", default="snli_sample",
                        help="a `zoo.data.corpora.load_corpus` source (default snli_sample)")
    parser.add_argument("--split", default="test", help="split of --dataset (default test)")
    parser.add_argument("--max-pairs", type=int, default=None)
    parser.add_argument("--json", help="also write the statistics to this JSON file")
    args = parser.parse_args(argv)

    run = zoo.load(args.run_dir)
    if args.jsonl:  # one file is one split (a pair without gold label is skipped and counted)
        examples = next(iter(load_corpus(args.jsonl)[0].values()))
    else:
        examples = load_corpus(args.dataset)[0][args.split]
    examples = examples[:args.max_pairs] if args.max_pairs else examples
    data = run.settings.data
    stats = gate_statistics(run.model, run.vocab, run.tokenizer, examples,
                            data.max_premise_length, data.max_hypothesis_length)
    print(format_report(stats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
