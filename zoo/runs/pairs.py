"""What a pair is, checked in one place: `(premise, hypothesis)` or `(premise, hypothesis,
premise_binary_parse, hypothesis_binary_parse)`, strings (`check_pairs`; `PairError`, one line naming the pair)."""


class PairError(ValueError):
    """A pair that is not `(premise, hypothesis[, premise_binary_parse, hypothesis_binary_parse])` strings."""


def check_pairs(pairs):
    """The pairs as tuples of 2 to 4 strings (parses filled in as "" up to 4 where the pair has them).

    Raises:
        PairError: one line naming the first pair that is not a tuple (or list) of 2 to 4 strings.
    """
    checked = []
    for index, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (tuple, list)) or not 2 <= len(pair) <= 4:
            raise PairError(f"pair {index}: expected (premise, hypothesis) or (premise, hypothesis, "
                            f"premise_binary_parse, hypothesis_binary_parse), got {_short(pair)}")
        bad = [i for i, part in enumerate(pair) if not isinstance(part, str)]
        if bad:
            raise PairError(f"pair {index}: item {bad[0]} must be a string, got {type(pair[bad[0]]).__name__}")
        checked.append(tuple(pair))
    return checked


def _short(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
