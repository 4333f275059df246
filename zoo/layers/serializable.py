"""The one package name under which every layer and model of the zoo is registered with Keras' serialization."""

# A `.keras` file names each class `nli_zoo>ClassName`; `keras.models.load_model` finds them once the
# classes are imported (`import zoo.models`, or `zoo.list_models()`, which imports every model file).
KERAS_PACKAGE = "nli_zoo"


def serializable(cls):
    """Class decorator: registers a layer or model class with Keras' serialization as `nli_zoo>ClassName`
    (`keras.saving.register_keras_serializable(package=KERAS_PACKAGE)`).

    Raises:
        ValueError: another class of the same name is registered already (its `.keras` files would load
            the wrong class).
    """
    import keras  # here: `zoo.registry` imports this module, and `import zoo` should not start a backend

    key = f"{KERAS_PACKAGE}>{cls.__name__}"
    known = keras.saving.get_registered_object(key)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"{key} is registered already, by {known.__module__}.{known.__qualname__}")
    return keras.saving.register_keras_serializable(package=KERAS_PACKAGE)(cls)
