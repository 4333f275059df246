"""One labelled set of pairs from a path, for the scripts that measure on real rows: a *tokens folder*
(`premise.txt`, `hypothesis.txt`, `label.txt`, one tokenized pair a line)
or any single file `zoo.data.corpora.load_corpus` reads (an SNLI jsonl file).

```python
examples, skipped = read_pairs("snli_dev_tokens")   # a folder of premise.txt, hypothesis.txt, label.txt
```
"""

import contextlib
import itertools
import os

from zoo.data.archives import DataFiles
from zoo.data.corpora import load_corpus
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.layout import Layout, read_examples

TOKEN_FILES = ("premise.txt", "hypothesis.txt", "label.txt")
TOKENS_LAYOUT = Layout({"premise": "premise", "hypothesis": "hypothesis", "label": "label"})


def is_tokens_folder(path):
    """Whether `path` is a folder holding the three `TOKEN_FILES`."""
    return os.path.isdir(path) and all(os.path.isfile(os.path.join(path, n)) for n in TOKEN_FILES)


def read_pairs(path):
    """The labelled pairs of a tokens folder or of one file `load_corpus` reads.

    Returns:
        `(examples, skipped)`: the examples (`zoo.data.corpora`'s format) and the number of pairs without a
        gold label. Labels are mapped and checked by the library (an unknown label is a `FILE:LINE` error).

    Raises:
        DataFormatError: a malformed line, or files of different lengths (`FILE:LINE`).
        DataUnavailableError: nothing readable there, or a corpus of several splits.
    """
    if not is_tokens_folder(path):
        splits, report = load_corpus(path)
        if len(splits) != 1:
            raise DataUnavailableError(f"{path}: expected one file or a tokens folder ({', '.join(TOKEN_FILES)}), "
                                       f"got the splits {', '.join(splits)}")
        split = next(iter(splits))
        return splits[split], sum(report["skipped"][split].values())
    with DataFiles(path) as files, contextlib.ExitStack() as stack:
        columns = [stack.enter_context(files.lines(name)) for name in TOKEN_FILES]
        records = []
        for lineno, fields in enumerate(itertools.zip_longest(*columns), 1):
            if None in fields:
                short = TOKEN_FILES[fields.index(None)]
                raise DataFormatError(f"{files.display(short)}:{lineno}: the file ends here, before the others "
                                      "(one pair per line in each)")
            records.append((lineno, dict(zip(("premise", "hypothesis", "label"),
                                              (f.rstrip("\r\n") for f in fields)))))
    examples, skipped = read_examples(records, TOKENS_LAYOUT, files.display("label.txt"))
    return examples, sum(skipped.values())
