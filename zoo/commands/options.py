"""Options shared by several commands, and the typed requests built from them."""

from zoo.commands.parsing import BATCH_SIZE, COUNT, EMBEDDING_DIM, EPOCHS, FILE_TO_READ, FOLDER_TO_READ, PATH_TO_READ
from zoo.diagnostics.request import SUITES, DiagnosticsRequest


def add_corpus_options(parser):
    """`--fields` and `--labels`, which say how to read an NLI file (train.py and evaluate.py)."""
    parser.add_argument("--fields", default=None, metavar="TARGET=FIELD,...",
                        help="NLI files: which record fields hold the pair, e.g. "
                             "premise=sentence1,hypothesis=sentence2,label=gold_label (the default)")
    parser.add_argument("--labels", default=None, metavar="DATA=LABEL,...",
                        help="NLI files: map the data's labels to entailment/neutral/contradiction (or 0/1/2), "
                             "e.g. entails=entailment,contradicts=contradiction")


def add_train_options(parser, vectors):
    """The options of `nli-zoo train` that a command training several runs passes on to each (sweep,
    reproduce), checked as train checks them; `vectors`: what `--embeddings` defaults to. (`--keras-verbose N`,
    Keras's fit verbosity, comes with the parser: `CommandParser(fit_verbosity=True)`.)"""
    parser.add_argument("--dataset", default=None, help="as nli-zoo train (default snli)")
    parser.add_argument("--data-dir", default=None, type=PATH_TO_READ, help="as nli-zoo train: a corpus on disk")
    parser.add_argument("--embeddings", default=None, help=f"as nli-zoo train (default: {vectors})")
    parser.add_argument("--embedding-dim", type=EMBEDDING_DIM, default=None,
                        help="as nli-zoo train, with --embeddings none")
    parser.add_argument("--epochs", type=EPOCHS, default=None, help="as nli-zoo train")
    parser.add_argument("--batch-size", type=BATCH_SIZE, default=None, help="as nli-zoo train")
    parser.add_argument("--max-train-examples", type=COUNT, default=None, help="as nli-zoo train")
    parser.add_argument("--max-eval-examples", type=COUNT, default=None, help="as nli-zoo train")


def add_diagnostics_options(parser):
    """Adds `--suite {diagnostics}` and the options of its sets to an argparse parser; returns the group
    (`diagnostics_request` reads them back)."""
    group = parser.add_argument_group("diagnostics", "with --suite diagnostics: challenge sets, behaviour tests "
                                      "and baselines (docs/diagnostics.md); sets not given are skipped")
    group.add_argument("--suite", choices=SUITES, default=None,
                       help="also run the diagnostics suite: a table per set, DIR/diagnostics.json, a PNG per "
                            "set and TensorBoard scalars")
    group.add_argument("--breaking-nli", type=FILE_TO_READ, metavar="FILE", default=None,
                       help="Breaking NLI's dataset.jsonl (Glockner et al. 2018): accuracy per category")
    group.add_argument("--hans", type=FILE_TO_READ, metavar="FILE", default=None,
                       help="HANS's heuristics_evaluation_set.txt (McCoy et al. 2019): accuracy per heuristic and "
                            "subcase, entailment vs non-entailment")
    group.add_argument("--snli-hard", type=FILE_TO_READ, metavar="FILE", default=None,
                       help="snli_1.0_test_hard.jsonl (Gururangan et al. 2018), beside the full test accuracy")
    group.add_argument("--stress-tests", type=FOLDER_TO_READ, metavar="DIR", default=None,
                       help="the Stress_Tests folder of Naik et al. 2018 (or its parent): accuracy per test, "
                            "matched / mismatched")
    group.add_argument("--anli", metavar="FILE|DIR|tfds", default=None,
                       help="ANLI (Nie et al. 2020): the release folder or zip (R1-R3 test.jsonl), one round's "
                            "file, or 'tfds' (tensorflow-datasets anli): accuracy per round")
    group.add_argument("--hypothesis-only", type=FOLDER_TO_READ, metavar="RUN", default=None,
                       help="a run of the hypothesis_only model: the artifacts report compares the model with it")
    group.add_argument("--no-behaviour", action="store_true",
                       help="skip the generated behaviour tests (negation, antonyms, hypernyms, numbers, ...)")
    return group


def diagnostics_request(args):
    """The `DiagnosticsRequest` of parsed options (`add_diagnostics_options`, plus `--dataset` /
    `--data-dir`, `--fields`, `--labels` and `--batch-size` where the parser has them)."""
    return DiagnosticsRequest(
        suite=args.suite, breaking_nli=args.breaking_nli, hans=args.hans, snli_hard=args.snli_hard,
        stress_tests=args.stress_tests, anli=args.anli, hypothesis_only=args.hypothesis_only,
        behaviour=not args.no_behaviour,
        data_source=getattr(args, "data_dir", None) or getattr(args, "dataset", None),
        fields=getattr(args, "fields", None), labels=getattr(args, "labels", None),
        batch_size=getattr(args, "batch_size", None))
