"""Distribution strategies for training: one device, mirrored over local devices, multi-worker."""

import json
import os

import tensorflow as tf


def configure_cpu_devices(count):
    """Splits the CPU into `count` logical devices (to test multi-device strategies without GPUs).

    Must run before TensorFlow initializes its devices (before any op runs).

    Args:
        count: number of logical CPU devices.
    """
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def make_strategy(name="auto"):
    """Creates a `tf.distribute.Strategy`.

    Args:
        name: `"auto"` (mirrored over all GPUs when more than one is visible, else the default
            strategy), `"one_device"` (first GPU, else CPU), `"mirrored"` (all GPUs, else all logical
            CPUs), or `"multi_worker"` (`MultiWorkerMirroredStrategy`, cluster from `TF_CONFIG`).

    Returns:
        the strategy.

    Raises:
        ValueError: for an unknown name, or `multi_worker` without a valid `TF_CONFIG`.
    """
    if name == "multi_worker":  # before anything initializes TensorFlow's context
        check_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "auto":
        if len(gpus) > 1:
            return tf.distribute.MirroredStrategy([d.name for d in gpus])
        return tf.distribute.get_strategy()
    if name == "one_device":
        device = gpus[0].name if gpus else tf.config.list_logical_devices("CPU")[0].name
        return tf.distribute.OneDeviceStrategy(device)
    if name == "mirrored":
        devices = gpus or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([d.name for d in devices])
    raise ValueError(f"unknown strategy {name!r}; choose auto, one_device, mirrored or multi_worker")


def check_tf_config():
    """Checks that `TF_CONFIG` describes a cluster and this worker.

    Returns:
        the parsed `TF_CONFIG`.

    Raises:
        ValueError: when it is missing or malformed.
    """
    text = os.environ.get("TF_CONFIG")
    if not text:
        raise ValueError("--strategy multi_worker needs the TF_CONFIG environment variable "
                         "(cluster and task), see docs/training.md")
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON: {error}") from None
    if "cluster" not in config or "task" not in config:
        raise ValueError("TF_CONFIG must have 'cluster' and 'task' entries")
    return config


def is_chief():
    """Whether this process writes the run directory (always true outside multi-worker training)."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return True
    task = json.loads(text).get("task", {})
    return task.get("type", "chief") == "chief" or (
        task.get("type") == "worker" and task.get("index", 0) == 0
        and "chief" not in json.loads(text).get("cluster", {}))


def describe(strategy):
    """A one-line description of `strategy`, e.g. `MirroredStrategy on 2 replicas`."""
    name = type(strategy).__name__
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        name = "MultiWorkerMirroredStrategy"  # its class is CollectiveAllReduceStrategy
    elif name == "_DefaultDistributionStrategy":
        name = "default strategy"
    return f"{name} on {strategy.num_replicas_in_sync} replica(s)"
