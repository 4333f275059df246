"""Options shared by several commands."""


def add_corpus_options(parser):
    """`--fields` and `--labels`, which say how to read an NLI file (train.py and evaluate.py)."""
    parser.add_argument("--fields", default=None, metavar="TARGET=FIELD,...",
                        help="NLI files: which record fields hold the pair, e.g. "
                             "premise=sentence1,hypothesis=sentence2,label=gold_label (the default)")
    parser.add_argument("--labels", default=None, metavar="DATA=LABEL,...",
                        help="NLI files: map the data's labels to entailment/neutral/contradiction (or 0/1/2), "
                             "e.g. entails=entailment,contradicts=contradiction")
