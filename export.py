"""Exports a trained run: a SavedModel for TF Serving, a TFLite model, or a preset (the same as
`nli-zoo export`).

Example:
```
python export.py --run-dir runs/rocktaschel_wbw                       # models/rocktaschel_wbw/1/
python export.py --run-dir runs/bowman_lstm --format tflite --max-vocabulary 20000 --quantize dynamic-range
python export.py --run-dir runs/bowman_lstm --format preset --out presets/bowman_lstm
```
The work is done by `zoo.commands.export`; see docs/serving.md and docs/presets.md.
"""

from zoo.commands.export import build_parser, export, main  # noqa: F401

if __name__ == "__main__":
    from zoo.commands import run

    run("export")
