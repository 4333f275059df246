"""Export of trained runs: SavedModel for TF Serving (`saved_model.py`) and TFLite (`tflite.py`), each written
whole under the run's lock (`exporting.py`), and the exports as predictors (`predictor.py`).

See docs/serving.md for the signatures, TF Serving commands and request formats.
"""

from zoo.export.exporting import ExportError
from zoo.export.saved_model import export_saved_model, next_version

__all__ = ["ExportError", "export_saved_model", "next_version"]
