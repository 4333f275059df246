"""The command-line strings of a corpus: `--fields`, `--labels` and `--roles` (`NAME=VALUE,...`) as the
mappings `zoo.data.corpora.load_corpus` takes."""

from zoo.constants import LABELS
from zoo.data.layout import REQUIRED, SNLI_FIELDS, TARGETS, UNLABELED, label_id, label_key

ROLES = ("train", "validation", "test")


def _pairs(text, option):
    """`"a=b,c=d"` -> {"a": "b", "c": "d"} (spaces around names ignored)."""
    pairs = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(f"{option}: expected NAME=VALUE items separated by commas, got {item!r}")
        if key in pairs:
            raise ValueError(f"{option}: {key!r} is given twice")
        pairs[key] = value
    if not pairs:
        raise ValueError(f"{option}: empty; expected NAME=VALUE items separated by commas")
    return pairs


def parse_fields(text, option="--fields"):
    """Parses a field mapping such as `"premise=sentence1,hypothesis=sentence2,label=gold_label"`.

    Args:
        text: comma-separated `TARGET=FIELD` items; targets: `premise`, `hypothesis`, `label`, `pair_id`,
            `genre`, `premise_binary_parse`, `hypothesis_binary_parse`. An empty field (`genre=`) means: do
            not read it (not allowed for `premise`, `hypothesis`, `label`).
        option: the option's name in messages.

    Returns:
        {target: field name or None}.

    Raises:
        ValueError: a malformed item, an unknown or repeated target, or a required target without a field.
    """
    fields = {}
    for target, column in _pairs(text, option).items():
        if target not in TARGETS:
            raise ValueError(f"{option}: unknown target {target!r}; targets: {', '.join(TARGETS)}")
        if not column and target in REQUIRED:
            raise ValueError(f"{option}: {target!r} needs a field name, e.g. {target}={SNLI_FIELDS[target]}")
        fields[target] = column or None
    return fields


def parse_labels(text, option="--labels"):
    """Parses a label mapping such as `"entails=entailment,contradicts=contradiction"` or `"0=entailment,..."`.

    Args:
        text: comma-separated `LABEL=NAME` items: a label as written in the data (text or number) and one of
            `entailment`, `neutral`, `contradiction`, or their ids 0, 1, 2.
        option: the option's name in messages.

    Returns:
        {label in the data: label name}.

    Raises:
        ValueError: a malformed or repeated item, or a target that is not a label name or id.
    """
    labels = {}
    for name, target in _pairs(text, option).items():
        target_id = label_id(target)
        if target_id is None:
            raise ValueError(f"{option}: {name!r} is mapped to {target!r}; map each label to entailment, neutral, "
                             "contradiction or their ids 0, 1, 2")
        if label_key(name) in UNLABELED:
            raise ValueError(f"{option}: {name!r} means no gold label (such pairs are skipped and counted)")
        labels[name] = LABELS[target_id]
    return labels


def parse_roles(text, option="--roles"):
    """Parses a role assignment such as `"validation=dev_mismatched,test=dev_matched"`.

    Args:
        text: comma-separated `ROLE=SPLIT` items; roles `train`, `validation` (or `dev`), `test`; the split
            `none` (or empty) leaves the role without a split.
        option: the option's name in messages.

    Returns:
        {role: split name or None}.

    Raises:
        ValueError: a malformed item or an unknown or repeated role.
    """
    roles = {}
    for role, split in _pairs(text, option).items():
        role = "validation" if role == "dev" else role
        if role not in ROLES:
            raise ValueError(f"{option}: unknown role {role!r}; roles: {', '.join(ROLES)}")
        if role in roles:
            raise ValueError(f"{option}: {role!r} is given twice")
        roles[role] = None if split.lower() in ("", "none") else split
    return roles
