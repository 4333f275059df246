"""nli-zoo: the attention-LSTM models of natural language inference, from data to a served model."""

from zoo.registry import create_model, get_preset, list_models, register_model

__all__ = ["create_model", "get_preset", "list_models", "register_model", "load"]


def load(run_dir):
    """Loads a training run (model with its best weights, vocabulary, tokenizer): see `zoo.runs`."""
    from zoo.runs import load_run

    return load_run(run_dir)
