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
- `classifier`: `NLIClassifier`, `NLIPreprocessor`, `NLITokenizer`.
- `saving`: `export_preset`, `write_preset` (atomic).
- `loading`: `from_preset` (checks before loading), `upload_preset`.
- `hub`: URIs, the hubs' clients, one-line errors.
- `card`: the generated model card.

This package stands beside `zoo.export` and `zoo.training`: it reads runs through `zoo.runs` and never
imports the training loop.
"""

from zoo.presets.classifier import NLIClassifier, NLIPreprocessor, NLITokenizer
from zoo.presets.files import PresetError, PresetIntegrityError, PresetMismatchError
from zoo.presets.hub import HubClientMissingError, HubError, HubUnreachableError, parse_uri
from zoo.presets.loading import from_preset, upload_preset, verify_preset
from zoo.presets.saving import export_preset, write_preset

__all__ = ["NLIClassifier", "NLIPreprocessor", "NLITokenizer", "PresetError", "PresetIntegrityError",
           "PresetMismatchError", "HubError", "HubUnreachableError", "HubClientMissingError", "parse_uri",
           "from_preset", "upload_preset", "verify_preset", "export_preset", "write_preset"]
