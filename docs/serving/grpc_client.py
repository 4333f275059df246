"""Asks TF Serving (gRPC, port 8500) for the labels of sentence pairs.

    pip install tensorflow-serving-api==2.21.0
    python grpc_client.py --model rocktaschel_wbw "A man plays a guitar." "A person makes music."
"""

import argparse

import grpc
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc


def make_request(pairs, model_name, signature_name="serving_default"):
    """A PredictRequest with the string inputs `premise` and `hypothesis` of shape [B]."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    request.inputs["premise"].CopyFrom(tf.make_tensor_proto([p for p, _ in pairs], dtype=tf.string))
    request.inputs["hypothesis"].CopyFrom(tf.make_tensor_proto([h for _, h in pairs], dtype=tf.string))
    return request


def predict(pairs, model_name, host="localhost:8500", timeout=10.0):
    """Labels and probabilities of `[(premise, hypothesis), ...]` from the server."""
    with grpc.insecure_channel(host) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(make_request(pairs, model_name), timeout)
    labels = tf.make_ndarray(response.outputs["label"])
    probabilities = tf.make_ndarray(response.outputs["probabilities"])
    return [(label.decode("utf-8"), p.tolist()) for label, p in zip(labels, probabilities)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="localhost:8500")
    parser.add_argument("--model", default="rocktaschel_wbw")
    parser.add_argument("premise")
    parser.add_argument("hypothesis")
    args = parser.parse_args()
    print(predict([(args.premise, args.hypothesis)], args.model, args.host))
