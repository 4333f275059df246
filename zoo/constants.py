"""Ids and names shared by the data pipeline and the models (defined once, here)."""

PAD_ID = 0    # "[PAD]": right padding; masks are `ids != PAD_ID`
UNK_ID = 1    # "[UNK]": words outside the vocabulary
NULL_ID = 2   # "[NULL]": Rocktäschel's delimiter, Wang & Jiang's NULL position
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[NULL]")

LABELS = ("entailment", "neutral", "contradiction")  # label ids 0, 1, 2 (tfds `snli` order)

EMBEDDING_DIM = 300  # the papers' word vector size: a model's default, and random vectors' (`--embedding-dim`)

# Tree arrays (see zoo/data/trees.py): the slots of a node's row `[left, right, level]`, and the value
# that fills padding node slots.
LEFT, RIGHT, LEVEL = 0, 1, 2
PAD_NODE = -1
