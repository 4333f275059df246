"""Which loop a `zoo.layers.recurrent.BidirectionalLSTM` runs: decided here, by one pure function.

`choose_loop(requested, backend, device, training, xla)` maps what the call knows to one of the loops of
`zoo.layers.lstm_loops` or Keras's own:

- `"packed"`: packed sequences (rows sorted by length, each step multiplying only the rows still inside
  their sentence; no work on padding, as PyTorch's packed LSTMs). Its row counts change from step to
  step, so it runs only where shapes may change inside a loop: TensorFlow without XLA.
- `"fused"`: one loop over every position of both directions, the input products taken out of it, with a
  hand-written gradient; fixed shapes, so it runs under XLA and JAX too.
- `"block"`: inference under TensorFlow on a CPU: a batch of at most `KERNEL_ROWS` rows (one pair's premise
  and hypothesis) runs `zoo.layers.tensorflow_lstm`'s few-rows loop (a step loop that reads only U per
  step, or TensorFlow's own LSTM kernel: at one pair the packed loop's thirty-odd ops a step cost more
  than its products); a larger batch runs the packed loop.
- `"keras"`: Keras's `Bidirectional(LSTM)` (cuDNN on a TensorFlow GPU, `lax.scan` under JAX).

The table (`requested` is the user's choice: the model's `lstm_loop`, or the layer's `loop`):

| requested | backend | device | training | xla | loop |
|---|---|---|---|---|---|
| `"keras"` | any | any | any | any | keras |
| any other | neither tensorflow nor jax | any | any | any | keras |
| `"auto"` | tensorflow or jax | gpu (any non-CPU device) | any | any | keras (what the GPU figures were measured on) |
| `"auto"` | tensorflow | cpu | True | False | packed |
| `"auto"` | tensorflow | cpu | False | False | block (float32; other dtypes packed) |
| `"auto"` | tensorflow | cpu | True | True | fused |
| `"auto"` | jax | cpu | True | any | fused |
| `"auto"` | tensorflow or jax | cpu | False | True (or jax) | keras |
| `"packed"` | tensorflow | any | any | False | packed |
| `"packed"` | tensorflow or jax | any | any | True (or jax) | fused |
| `"block"` | tensorflow | any | False | False | block (float32; other dtypes packed) |
| `"block"` | otherwise | | | | as `"packed"` |
| `"fused"` | tensorflow or jax | any | any | any | fused |

`xla` is True where the graph compiles with fixed shapes: a Keras step with `jit_compile=True`, the
SavedModel's XLA path, the TFLite converter. JAX always compiles (its shapes are fixed too).
"""

LOOPS = ("packed", "block", "fused", "keras")
# "block": inference batches of up to this many rows run TensorFlow's kernel, larger ones the packed loop. One
# pair is 2 rows joined (`BidirectionalLSTM.call_pair`): at one pair the kernel saves the packed loop's per-step
# ops and runs the two directions side by side on two inter-op threads; from two pairs on its per-step product
# with the whole [W; U] (twice U's read) and its work on a shorter row's padding cost more than it saves. The
# crossover is measured by `scripts/loop_crossover.py`; its record and table: docs/speed.md, "loop-crossover".
KERNEL_ROWS = 2
# The few-rows loop's designs (`zoo.layers.tensorflow_lstm`): "steps" reads only U per step, "kernel" is
# TensorFlow's BlockLSTMV2 reading [W; U]. Which is faster depends on the CPU's caches; "steps" is the default
# on any CPU, and `nli-zoo tune` measures the machine at hand (`zoo.export.loop_tuning`).
DESIGNS = ("steps", "kernel")
DEFAULT_DESIGN = "steps"
DESIGN_REQUESTS = ("auto",) + DESIGNS  # `export.py --loop`: "auto" is this machine's tuned choice, else the default
DEFAULT_DESIGN_REQUEST = "auto"
# `nli-zoo tune`'s measurement (`zoo.export.loop_timing`): the model timed at its preset size, the rounds (the
# candidates alternating, each one's median kept) and the calls of each candidate per round.
TUNE_MODEL, TUNE_ROUNDS, TUNE_CALLS = "esim", 5, 20
# A tuned choice departs from the default (DEFAULT_DESIGN, KERNEL_ROWS) only where the other candidate's median is
# at least this share faster: a difference inside the rounds' noise keeps the default that is safe on any CPU.
TUNE_MARGIN = 0.05
REQUESTS = ("auto",) + LOOPS
BACKENDS_WITH_OWN_LOOPS = ("tensorflow", "jax")


def check_request(requested, what="lstm_loop"):
    """`requested` when it is one of `REQUESTS`, else a ValueError naming `what` and the choices."""
    if requested not in REQUESTS:
        raise ValueError(f"{what} must be one of {', '.join(REQUESTS)}, got {requested!r}")
    return requested


def choose_loop(requested, backend, device, training, xla, dtype="float32"):
    """The loop a bi-LSTM call runs (the module's table).

    Args:
        requested: `"auto"`, `"packed"`, `"block"`, `"fused"` or `"keras"`.
        backend: Keras's backend name (`keras.backend.backend()`).
        device: `"cpu"` or another device kind (`"gpu"`, `"tpu"`).
        training: whether the call is a training step.
        xla: whether the graph compiles with fixed shapes (XLA, the TFLite converter).
        dtype: the layer's compute dtype (TensorFlow's kernel runs float32 only).

    Returns:
        `"packed"`, `"block"`, `"fused"` or `"keras"`.
    """
    check_request(requested, "requested loop")
    if requested == "keras" or backend not in BACKENDS_WITH_OWN_LOOPS:
        return "keras"
    fixed_shapes = bool(xla) or backend != "tensorflow"
    if requested == "fused":
        return "fused"
    if requested == "packed":
        return "fused" if fixed_shapes else "packed"
    if requested == "auto" and device != "cpu":
        return "keras"
    if fixed_shapes:  # "block" as "packed" there; "auto" infers on Keras's loops
        return "fused" if requested == "block" or training else "keras"
    return "block" if not training and dtype == "float32" else "packed"  # "auto" on a CPU, or "block"


def device_kind():
    """`"cpu"`, or the kind of the first device Keras sees (`"gpu"`, `"tpu"`)."""
    import keras

    devices = keras.distribution.list_devices()
    return devices[0].split(":")[0].lower() if devices else "cpu"
