"""Export of trained runs: SavedModel for TF Serving (`saved_model.py`) and TFLite (`tflite.py`).

See docs/serving.md for the signatures, TF Serving commands and request formats.
"""

from zoo.export.saved_model import ExportError, export_saved_model, next_version

__all__ = ["ExportError", "export_saved_model", "next_version"]
