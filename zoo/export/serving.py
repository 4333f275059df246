"""TF Serving's request formats, applied to a SavedModel loaded in Python.

TF Serving itself cannot run everywhere (it needs Docker or its binary); these helpers apply its REST
"row" format (`{"instances": [...]}` -> `{"predictions": [...]}`) and read its gRPC `PredictRequest`
with a SavedModel loaded by `tf.saved_model.load`, so that the documented payloads can be checked
against the exported signatures (tests/test_export.py) and the documented responses reproduced.

Example:
```python
loaded = tf.saved_model.load("models/rocktaschel_wbw/1")
rest_predict(loaded, {"instances": [{"premise": "A man sleeps.", "hypothesis": "A man is awake."}]})
# {"predictions": [{"label": "contradiction", "label_id": 2, "probabilities": [...]}]}
```
"""

import numpy as np
import tensorflow as tf

from zoo.export.saved_model import INPUT_NAMES


class RequestError(ValueError):
    """A request that TF Serving would reject (missing input, wrong type)."""


def instances_to_inputs(instances, names=INPUT_NAMES):
    """The input tensors of REST row-format `instances`.

    Args:
        instances: a list of `{"premise": str, "hypothesis": str}` (plus `"premise_binary_parse"` and
            `"hypothesis_binary_parse"` for a model that reads parse trees).
        names: the signature's input names.

    Returns:
        `{name: tf.string [N]}`.

    Raises:
        RequestError: an instance is not an object with exactly the string inputs.
    """
    if not isinstance(instances, list) or not instances:
        raise RequestError('"instances" must be a non-empty list')
    columns = {name: [] for name in names}
    for i, instance in enumerate(instances):
        if not isinstance(instance, dict) or set(instance) != set(names):
            raise RequestError(f"instance {i} must be an object with the keys {', '.join(names)}")
        for name in names:
            if not isinstance(instance[name], str):
                raise RequestError(f"instance {i}: {name!r} must be a string")
            columns[name].append(instance[name])
    return {name: tf.constant(values, dtype=tf.string) for name, values in columns.items()}


def signature_error(error):
    """The line of a signature's `InvalidArgumentError` that says what is wrong with the request (for a
    malformed parse: `assertion failed: [premise_binary_parse[ROW]: REASON]`), as TF Serving reports it."""
    lines = [line.strip() for line in error.message.splitlines() if line.strip()]
    return next((line for line in lines if "assertion failed" in line), lines[0] if lines else str(error))


def to_json_value(value):
    """A numpy value as JSON (strings decoded from UTF-8, as TF Serving does for DT_STRING)."""
    if isinstance(value, np.ndarray):
        return [to_json_value(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.floating):
        return float(repr(value.item()) if value.dtype == np.float64 else np.format_float_positional(value))
    if isinstance(value, np.generic):
        return value.item()
    return value


def outputs_to_predictions(outputs):
    """REST row-format predictions: one `{output name: value}` object per instance.

    Args:
        outputs: `{name: Tensor [N, ...]}` from a signature.

    Returns:
        a list of N dicts (keys sorted).
    """
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    count = len(next(iter(arrays.values())))
    return [{name: to_json_value(arrays[name][i]) for name in sorted(arrays)} for i in range(count)]


def rest_predict(loaded, request):
    """Answers a REST `:predict` request body (row format) with a loaded SavedModel.

    Args:
        loaded: the result of `tf.saved_model.load(version_dir)`.
        request: `{"instances": [...], "signature_name": optional}`.

    Returns:
        `{"predictions": [...]}`.

    Raises:
        RequestError: unknown signature, malformed instances, or inputs the signature rejects (a
            malformed binary parse), with TF Serving's message.
    """
    name = request.get("signature_name", "serving_default")
    if name not in loaded.signatures:
        raise RequestError(f"unknown signature {name!r}; the model has {', '.join(sorted(loaded.signatures))}")
    signature = loaded.signatures[name]
    inputs = instances_to_inputs(request.get("instances"), tuple(sorted(signature.structured_input_signature[1])))
    try:
        outputs = signature(**inputs)
    except tf.errors.InvalidArgumentError as error:
        raise RequestError(signature_error(error)) from None
    return {"predictions": outputs_to_predictions(outputs)}


def grpc_predict(loaded, request):
    """Answers a `tensorflow_serving.apis.predict_pb2.PredictRequest` with a loaded SavedModel.

    Args:
        loaded: the result of `tf.saved_model.load(version_dir)`.
        request: a `PredictRequest` (its `model_spec.signature_name` selects the signature).

    Returns:
        `{output name: np.ndarray}` (what `tf.make_ndarray` gives on `PredictResponse.outputs`).
    """
    name = request.model_spec.signature_name or "serving_default"
    signature = loaded.signatures[name]
    expected = signature.structured_input_signature[1]
    inputs = {}
    for key, proto in request.inputs.items():
        if key not in expected:
            raise RequestError(f"unknown input {key!r}; the signature takes {', '.join(sorted(expected))}")
        if tf.dtypes.as_dtype(proto.dtype) != expected[key].dtype:
            raise RequestError(f"input {key!r} has dtype {tf.dtypes.as_dtype(proto.dtype).name}, "
                               f"the signature wants {expected[key].dtype.name}")
        shape = [d.size for d in proto.tensor_shape.dim]
        if len(shape) != expected[key].shape.rank:
            raise RequestError(f"input {key!r} must be a list of strings, one per pair (shape [B]), got shape "
                               f"{shape} (a single pair is a list of one)")
        inputs[key] = tf.constant(tf.make_ndarray(proto), dtype=expected[key].dtype)
    try:
        outputs = signature(**inputs)
    except tf.errors.InvalidArgumentError as error:
        raise RequestError(signature_error(error)) from None
    return {key: value.numpy() for key, value in outputs.items()}
