"""Distribution strategies for training: one device, mirrored over local devices, multi-worker.

Multi-worker training (`--strategy multi_worker`) runs one process per worker, each with its own
`TF_CONFIG` (see docs/hardware.md, "Strategies"):

```python
os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["host1:23456", "host2:23456"]},
                                      "task": {"type": "worker", "index": 0}})
strategy = make_strategy("multi_worker", cluster_timeout=300)   # returns once every worker is up
is_chief()                                                       # True on worker 0: it writes the run
```
"""

import json
import os
import shutil
import socket

import tensorflow as tf
from tensorflow.python.eager import context  # the coordination service has no public API (see below)

from zoo.runs import layout

# How long `make_strategy("multi_worker")` waits for every worker of TF_CONFIG to come up (seconds).
DEFAULT_CLUSTER_TIMEOUT = 300.0
# The TF_CONFIG jobs that take part in MultiWorkerMirroredStrategy training.
TRAINING_JOBS = ("chief", "worker")

# The task of this process once a multi-worker strategy was created here (None: no cluster).
_cluster_task = None


def configure_cpu_devices(count):
    """Splits the CPU into `count` logical devices (to test multi-device strategies without GPUs).

    Must run before TensorFlow initializes its devices (before any op runs).

    Args:
        count: number of logical CPU devices.
    """
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def make_strategy(name="auto", cluster_timeout=DEFAULT_CLUSTER_TIMEOUT):
    """Creates a `tf.distribute.Strategy`.

    Args:
        name: `"auto"` (mirrored over all GPUs when more than one is visible, else the default
            strategy), `"one_device"` (first GPU, else CPU), `"mirrored"` (all GPUs, else all logical
            CPUs), or `"multi_worker"` (`MultiWorkerMirroredStrategy`, cluster from `TF_CONFIG`; see
            `connect_cluster`).
        cluster_timeout: `multi_worker` only: seconds to wait for every worker to come up (None:
            `DEFAULT_CLUSTER_TIMEOUT`; 0: wait forever).

    Returns:
        the strategy.

    Raises:
        ValueError: for an unknown name, or `multi_worker` with a missing or malformed `TF_CONFIG`, or
            a cluster that fails to start.
    """
    if name == "multi_worker":  # before anything initializes TensorFlow's context
        timeout = DEFAULT_CLUSTER_TIMEOUT if cluster_timeout is None else cluster_timeout
        return connect_cluster(check_tf_config(), timeout)
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


# TF_CONFIG ---------------------------------------------------------------------------------------
def check_tf_config(text=None):
    """Checks that `TF_CONFIG` describes a training cluster and this process' task in it.

    A cluster maps `"chief"` (at most one address) and `"worker"` to lists of distinct `host:port`
    addresses; the task names one of them by `type` and `index`.

    Args:
        text: the JSON text (default: the `TF_CONFIG` environment variable).

    Returns:
        the parsed `TF_CONFIG`.

    Raises:
        ValueError: when it is missing or malformed, with one line saying what is wrong.
    """
    text = os.environ.get("TF_CONFIG") if text is None else text
    if not text or not text.strip():
        raise ValueError("--strategy multi_worker needs the TF_CONFIG environment variable "
                         "(cluster and task), see docs/hardware.md")
    try:
        tf_config = json.loads(text)
    except ValueError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON: {error}") from None
    if not isinstance(tf_config, dict) or not isinstance(tf_config.get("cluster"), dict) \
            or not isinstance(tf_config.get("task"), dict):
        raise ValueError("TF_CONFIG must be a JSON object with 'cluster' and 'task' objects, e.g. "
                         '{"cluster": {"worker": ["host1:23456", "host2:23456"]}, "task": {"type": "worker", "index": 0}}')
    cluster, task = tf_config["cluster"], tf_config["task"]
    other = sorted(set(cluster) - set(TRAINING_JOBS))
    if other:
        raise ValueError(f"TF_CONFIG cluster has job(s) {other}: MultiWorkerMirroredStrategy trains with "
                         "'chief' and 'worker' tasks only")
    if not cluster:
        raise ValueError("TF_CONFIG cluster is empty: list the workers' addresses under 'worker'")
    seen = {}
    for job, addresses in cluster.items():
        if not isinstance(addresses, list) or not addresses:
            raise ValueError(f"TF_CONFIG cluster[{job!r}] must be a non-empty list of 'host:port' addresses")
        if job == "chief" and len(addresses) != 1:
            raise ValueError(f"TF_CONFIG cluster['chief'] must have exactly one address, not {len(addresses)}")
        for index, address in enumerate(addresses):
            host, port = _split_address(address, f"TF_CONFIG cluster[{job!r}][{index}]")
            if (host, port) in seen:
                raise ValueError(f"TF_CONFIG cluster[{job!r}][{index}] repeats the address {address!r} of "
                                 f"{seen[(host, port)]}: every task needs its own port")
            seen[(host, port)] = f"{job} {index}"
    kind, index = task.get("type"), task.get("index", 0)
    if kind not in cluster:
        raise ValueError(f"TF_CONFIG task type {kind!r} is not a job of the cluster {sorted(cluster)}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cluster[kind]):
        raise ValueError(f"TF_CONFIG task index {index!r} is not one of the {len(cluster[kind])} "
                         f"{kind!r} address(es) (0 to {len(cluster[kind]) - 1})")
    return tf_config


def _split_address(address, where):
    if not isinstance(address, str) or address.count(":") < 1:
        raise ValueError(f"{where} is {address!r}, not a 'host:port' address")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{where} is {address!r}, not a 'host:port' address with a port from 1 to 65535")
    return host.strip("[]"), int(port)


class ClusterTask:
    """This process' task in a TF_CONFIG cluster.

    Attributes:
        type: `"chief"` or `"worker"`.
        index: the task's index in its job.
        chief: whether it is the chief (the `chief` task, else worker 0): the one that writes the run.
        address: its `host:port`.
        peers: `[(name, address)]` of the other tasks, e.g. `[("worker 1", "host2:23456")]`.
    """

    def __init__(self, tf_config):
        cluster, task = tf_config["cluster"], tf_config["task"]
        self.type, self.index = task["type"], task.get("index", 0)
        self.chief = self.type == "chief" or ("chief" not in cluster and self.index == 0)
        self.address = cluster[self.type][self.index]
        self.peers = [(f"{job} {i}", address) for job in TRAINING_JOBS for i, address in enumerate(cluster.get(job, []))
                      if (job, i) != (self.type, self.index)]

    @property
    def name(self):
        """`TYPE-INDEX`, e.g. `worker-1` (the name of a non-chief's scratch directory)."""
        return f"{self.type}-{self.index}"


def worker_task():
    """This process' `ClusterTask` when it created a multi-worker strategy, else None."""
    return _cluster_task


def is_chief():
    """Whether this process writes the run directory: false only for a non-chief task of the multi-worker
    strategy created in this process (a `TF_CONFIG` in the environment alone changes nothing)."""
    return _cluster_task is None or _cluster_task.chief


# Multi-worker ------------------------------------------------------------------------------------
class KerasMultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` whose `reduce` accepts what Keras 3's TensorFlow trainer gives it.

    Keras 3.15 calls `strategy.reduce` in two ways that `MirroredStrategy` accepts and the collective
    implementation behind `MultiWorkerMirroredStrategy` rejects once there are two workers:

    - `fit` and `evaluate` build the model from the first batch by `reduce("MEAN", batch, axis=None)`
      where `batch` is the whole `(features, labels, weights)` structure; collective all-reduce takes
      one tensor at a time (`ValueError: Attempt to convert a value ({'premise': PerReplica:...`).
    - each step's logs (scalars) are reduced with `reduce("MEAN", value, axis=0)`, an axis a scalar
      does not have (`ValueError: Invalid reduction dimension 0 for input with 0 dimensions`).

    Here a structure is reduced leaf by leaf, and a replica's scalar is reduced over the replicas only
    (what `axis=0` means for a value with one entry per replica, as Keras' single-worker path does).
    Everything else is `MultiWorkerMirroredStrategy`'s own reduction.
    """

    def reduce(self, reduce_op, value, axis):
        def reduce_one(v):
            local = self.experimental_local_results(v)[0]
            scalar = axis is not None and getattr(local, "shape", None) is not None and local.shape.rank == 0
            return super(KerasMultiWorkerMirroredStrategy, self).reduce(reduce_op, v, None if scalar else axis)

        return tf.nest.map_structure(reduce_one, value)


def connect_cluster(tf_config, timeout=DEFAULT_CLUSTER_TIMEOUT):
    """Creates the multi-worker strategy of the `TF_CONFIG` cluster once every worker is up.

    TensorFlow's coordination service (led by the chief, else worker 0) registers every task before the
    strategy exists. It is configured here to give up after `timeout` seconds: by default it waits
    forever, and a worker that cannot reach its peers then hangs inside TensorFlow, where neither an
    exception nor SIGTERM (which TensorFlow's preemption notifier takes) reaches it. A first all-reduce
    then checks that the workers reach each other.

    Args:
        tf_config: the parsed `TF_CONFIG` (`check_tf_config`).
        timeout: seconds to wait for every task to register (0: wait forever). The leader gives up about
            `timeout` seconds after it starts, another worker about 5 s later (its last registration
            attempt must time out too).

    Returns:
        a `KerasMultiWorkerMirroredStrategy`.

    Raises:
        ValueError: one line, when this task's port is taken, a peer does not come up in time (naming
            the peers a TCP connection cannot reach), or the cluster fails otherwise.
    """
    global _cluster_task

    task = ClusterTask(tf_config)
    _check_port_free(task)
    if timeout and timeout > 0:
        _configure_coordination(tf_config["cluster"], timeout)
    try:
        strategy = KerasMultiWorkerMirroredStrategy()
        replicas = strategy.reduce("SUM", strategy.experimental_distribute_values_from_function(
            lambda context: tf.constant(1, tf.int32)), axis=None)
    except tf.errors.DeadlineExceededError:
        raise ValueError(_no_cluster_message(task, timeout)) from None
    except (tf.errors.OpError, RuntimeError) as error:
        message = " ".join(str(getattr(error, "message", error)).split())
        raise ValueError(f"--strategy multi_worker: the cluster of TF_CONFIG failed on {task.type} {task.index} "
                         f"({task.address}): {message[:300]}") from None
    if int(replicas) != strategy.num_replicas_in_sync:
        raise ValueError(f"--strategy multi_worker: {int(replicas)} replica(s) answered, expected "
                         f"{strategy.num_replicas_in_sync}")
    _cluster_task = task
    return strategy


def _configure_coordination(cluster, timeout):
    """The coordination service `MultiWorkerMirroredStrategy` sets up itself (leader: the chief, else
    worker 0; jobs chief and worker), with registration behind a barrier that times out.

    TensorFlow has no public API for these settings; `MultiWorkerMirroredStrategy` keeps one set before
    it is created (it only configures the service when nothing is configured).
    """
    leader = "chief" if "chief" in cluster else "worker"
    context.context().configure_coordination_service(
        service_type="standalone", service_leader=f"/job:{leader}/replica:0/task:0",
        cluster_register_timeout_in_ms=int(timeout * 1000))
    settings = context.context().coordination_service
    settings.cluster_register_with_barrier = True  # every task, the leader included, waits for all, bounded
    for job in TRAINING_JOBS:
        if job in cluster:
            settings.coordinated_job_list.add(name=job, num_tasks=len(cluster[job]))


def _check_port_free(task):
    """Raises a one-line ValueError when another process (an earlier run of this worker?) listens on this
    task's port; gRPC would share the port with it."""
    _, port = _split_address(task.address, "this task's address")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as error:
            raise ValueError(f"--strategy multi_worker: port {port} of {task.type} {task.index} ({task.address}) "
                             f"is taken ({error.strerror or error}): is an earlier run of this worker still "
                             "running?") from None


def _unreachable(peers, timeout=1.0):
    """The peers `[(name, address)]` a TCP connection cannot reach, each with the reason."""
    found = []
    for name, address in peers:
        host, port = _split_address(address, name)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as error:
            found.append(f"{name} at {address} ({error.strerror or type(error).__name__})")
    return found


def _no_cluster_message(task, timeout):
    missing = _unreachable(task.peers)
    where = (f"cannot reach {', '.join(missing)}" if missing else
             "every peer's port answers, but not every peer joined (do all run --strategy multi_worker with "
             "the same cluster in TF_CONFIG?)")
    return (f"--strategy multi_worker: the cluster did not come up within {timeout:g} s (--cluster-timeout) on "
            f"{task.type} {task.index} ({task.address}): {where}; start every worker of TF_CONFIG, each with "
            "its own task")


# Non-chief workers -------------------------------------------------------------------------------
# What a run directory holds that decides where a rerun resumes (zoo.runs.layout): a non-chief worker
# starts from a copy of the chief's, so that both resume at the same epoch with the same history.
RUN_STATE = (layout.CONFIG_FILE, layout.VOCAB_FILE, layout.HISTORY_FILE, layout.BEST_WEIGHTS_FILE, layout.RESULTS_FILE,
             layout.BACKUP_DIR)


def follow_chief(chief_dir, worker_dir):
    """Resets a non-chief worker's scratch directory to a copy of the chief's run state.

    Each worker keeps its own `BackupAndRestore` state, written at the end of every epoch a moment
    before or after the chief's. A kill between the two would let the workers resume at different
    epochs and then wait for each other forever; starting every non-chief from the chief's state
    (config.json, vocabulary, history, best weights, backup, results) makes every worker resume exactly
    where the chief resumes. Call it once the cluster is up: the chief then changes its state only in
    training steps, which need this worker (or deletes it with `--overwrite`, as this worker then does).

    Args:
        chief_dir: the run directory.
        worker_dir: this worker's scratch directory (`RUN/workers/TYPE-INDEX`), replaced.
    """
    shutil.rmtree(worker_dir, ignore_errors=True)
    os.makedirs(worker_dir, exist_ok=True)
    if not os.path.exists(os.path.join(chief_dir, RUN_STATE[0])):
        return  # a new run (config.json is written after the vocabulary)
    for name in RUN_STATE:
        source, target = os.path.join(chief_dir, name), os.path.join(worker_dir, name)
        try:
            if os.path.isdir(source):
                shutil.copytree(source, target)
            elif os.path.exists(source):
                shutil.copy2(source, target)
        except OSError:  # the chief deletes its run (--overwrite): this worker starts again too
            continue


def describe(strategy):
    """A one-line description of `strategy`, e.g. `MirroredStrategy on 2 replicas`."""
    name = type(strategy).__name__
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        name = "MultiWorkerMirroredStrategy"  # its class is CollectiveAllReduceStrategy
    elif name == "_DefaultDistributionStrategy":
        name = "default strategy"
    return f"{name} on {strategy.num_replicas_in_sync} replica(s)"
