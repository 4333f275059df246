"""`iter_layers`: every layer inside a layer or model, through the attributes Keras tracks."""

import keras


def iter_layers(layer):
    """Every layer inside `layer` (itself excluded), depth first, each once.

    Walks the attributes Keras tracks: sublayers held directly, in lists, tuples or dicts, and the wrapped
    layers of `Bidirectional` and `RNN` (its `cell`).
    """
    seen, stack, found = {id(layer)}, [layer], []
    while stack:
        current = stack.pop()
        for value in vars(current).values():
            if isinstance(value, dict):
                values = value.values()
            else:
                values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                    seen.add(id(item))
                    found.append(item)
                    stack.append(item)
    return found
