"""nli-zoo: the attention-LSTM models of natural language inference, from data to a served model."""

import logging

from zoo.registry import create_model, get_preset, list_models, register_model

# The zoo speaks through `logging` (a logger per module under "zoo"), and stays silent in an application that
# configures no logging; the command lines print its messages (zoo.commands.messages).
logging.getLogger("zoo").addHandler(logging.NullHandler())

__all__ = ["create_model", "get_preset", "list_models", "register_model", "load", "from_preset"]


def load(run_dir):
    """Loads a training run (model with its best weights, vocabulary, tokenizer): see `zoo.runs`."""
    from zoo.quiet import start_runtime  # here, as below: `import zoo` should not import TensorFlow or keras

    start_runtime()  # TensorFlow's notices filtered out of stderr (zoo.quiet)
    from zoo.runs import load_run

    return load_run(run_dir)


def from_preset(preset, compile=True):
    """Loads a preset (a folder, `hf://OWNER/NAME` or `kaggle://OWNER/MODEL/keras/VARIANT`) as a Keras
    classifier taking raw sentence pairs: see `zoo.presets` and docs/presets.md."""
    from zoo.quiet import import_backend, start_runtime

    start_runtime()
    import_backend()
    from zoo.presets import from_preset as load_preset

    return load_preset(preset, compile=compile)
