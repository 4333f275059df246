"""A trained model put to work, as library calls that return typed records: `evaluate(EvaluateRequest)` scores
a run, a SavedModel, a TFLite export or a preset on labelled data (`Evaluation`), `predict(PredictRequest)`
labels pairs (`Predictions`). `nli-zoo evaluate` and `nli-zoo predict` build the requests from their flags,
call these and print the records; from Python they are `zoo.evaluate` and `zoo.predict`.

The modules are imported one by one (`zoo.inference.evaluate`, `zoo.inference.predict`): each imports
TensorFlow only once its request is checked.
"""
