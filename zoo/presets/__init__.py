"""Presets: a finished run as a directory in KerasHub's layout that anyone can load, from a folder,
`hf://` or `kaggle://`, as a Keras classifier taking raw sentence pairs (docs/presets.md).

```python
from zoo.presets import export_preset, from_preset, upload_preset
from zoo.runs import load_run

export_preset(load_run("runs/bowman_lstm"), "presets/bowman_lstm")    # export.py --format preset
classifier = from_preset("presets/bowman_lstm")                        # or hf://..., kaggle://...
classifier.predict([("A man plays a guitar.", "A person makes music.")])
upload_preset("presets/bowman_lstm", "hf://someone/bowman_lstm_snli")
```

- `files`: the layout (KerasHub's file names), SHA-256 checksums, the errors.
- `tokenizer`: `NLITokenizer`, a Keras layer (the run's tokenizer; its vocabulary an asset).
- `preprocessor`: `NLIPreprocessor`, a Keras layer (raw pairs to id inputs, the run's truncation).
- `classifier`: `NLIClassifier`, the task (a `keras.Model`: the zoo model and its preprocessor).
- `saving`: `write_preset` (a classifier's preset, built beside the folder and moved in whole, locked).
- `run_export`: `export_preset` (a finished run's preset, under the run's lock).
- `loading`: `from_preset` (checks before loading), `upload_preset`.
- `hub`: URIs, the hubs' clients, one-line errors.
- `card`: the generated model card.

This package stands beside `zoo.export` and `zoo.training`: it reads runs through `zoo.runs` and never
imports the training loop.
"""

from zoo.presets.classifier import NLIClassifier
from zoo.presets.files import PresetError, PresetIntegrityError, PresetMismatchError
from zoo.presets.hub import HubClientMissingError, HubError, HubUnreachableError, parse_uri
from zoo.presets.loading import from_preset, upload_preset, verify_preset
from zoo.presets.preprocessor import NLIPreprocessor
from zoo.presets.run_export import export_preset
from zoo.presets.saving import write_preset
from zoo.presets.tokenizer import NLITokenizer

__all__ = ["NLIClassifier", "NLIPreprocessor", "NLITokenizer", "PresetError", "PresetIntegrityError",
           "PresetMismatchError", "HubError", "HubUnreachableError", "HubClientMissingError", "parse_uri",
           "from_preset", "upload_preset", "verify_preset", "export_preset", "write_preset"]
