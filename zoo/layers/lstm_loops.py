"""The LSTM loops behind `zoo.layers.recurrent.BidirectionalLSTM`, each with its own gradient where it trains.

- `lstm_loop` / `lstm_states`: every row at every step (padding included), both directions stacked; training /
  inference; TensorFlow and JAX.
- `packed_lstm` / `packed_lstm_loop`: packed sequences (rows sorted longest first, the real tokens of all
  steps in one time-major array), each step multiplying only the rows still inside their sentence, as
  PyTorch's packed LSTMs do; inference / training. Their row counts change from step to step, so they
  run where shapes may change inside a loop: TensorFlow without XLA.

The LSTM is Keras's (gates i, f, g, o):

    z_t = Z_x[t] + h_{t-1} U,   c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),   h_t = σ(o) ⊙ tanh(c_t)

and the gradient of a step, written once (`_step_gradient`), is

    dh = ∂L/∂h_t + dh_{t+1},   dc = dc_{t+1} + dh ⊙ o ⊙ (1 − tanh²c_t)
    dz = [dc ⊙ g ⊙ i(1 − i),  dc ⊙ c_{t-1} ⊙ f(1 − f),  dc ⊙ i ⊙ (1 − g²),  dh ⊙ tanh c_t ⊙ o(1 − o)]
    dh_t−1 = dz Uᵀ,   dc_t−1 = dc ⊙ f

after which ∂U = Σ_t h_{t-1}ᵀ dz_t and ∂Z_x = dz are each one large product or copy over all steps.
"""

from keras import ops


def _gates(z):
    """The activated gates [i, f, g, o] of pre-activations `z` `[..., 4h]`."""
    i, f, g, o = ops.split(z, 4, axis=-1)
    return ops.sigmoid(i), ops.sigmoid(f), ops.tanh(g), ops.sigmoid(o)


def _step_gradient(dh, dc_next, i, f, g, o, c, c_prev):
    """dz `[..., 4h]` and dc_{t-1} of one step (the module's docstring) from dh = ∂L/∂h_t + dh_{t+1}."""
    tanh_c = ops.tanh(c)
    dc = ops.add(dc_next, ops.multiply(ops.multiply(dh, o), ops.subtract(1.0, ops.square(tanh_c))))
    dz = ops.concatenate([ops.multiply(ops.multiply(dc, g), ops.multiply(i, ops.subtract(1.0, i))),
                          ops.multiply(ops.multiply(dc, c_prev), ops.multiply(f, ops.subtract(1.0, f))),
                          ops.multiply(ops.multiply(dc, i), ops.subtract(1.0, ops.square(g))),
                          ops.multiply(ops.multiply(dh, tanh_c), ops.multiply(o, ops.subtract(1.0, o)))], axis=-1)
    return dz, ops.multiply(dc, f)


@ops.custom_gradient
def lstm_loop(steps, recurrent):
    """LSTM states of `D` stacked directions over time, with a hand-written gradient.

    Args:
        steps: `[L, D*B, 4h]`, the input products and biases of every step (direction d in rows d*B ...).
        recurrent: `[D, h, 4h]`, each direction's recurrent kernel U (gates i, f, g, o).

    Returns:
        the states h_t `[L, D*B, h]`.
    """
    directions, h = ops.shape(recurrent)[0], ops.shape(recurrent)[1]
    rows = ops.shape(steps)[1]
    batch = rows // directions

    def times_recurrent(state, kernel):  # [D*B, k] x [D, k, m] -> [D*B, m], direction by direction
        product = ops.matmul(ops.reshape(state, (directions, batch, -1)), kernel)
        return ops.reshape(product, (rows, -1))

    def forward_step(carry, z_x):
        h_prev, c_prev, _ = carry
        i, f, g, o = _gates(ops.add(z_x, times_recurrent(h_prev, recurrent)))               # [D*B, h] each
        c = ops.add(ops.multiply(f, c_prev), ops.multiply(i, g))
        h_t = ops.multiply(o, ops.tanh(c))
        activated = ops.concatenate([i, f, g, o], axis=-1)
        return (h_t, c, activated), (h_t, c, activated)  # Keras's TF scan: outputs shaped as the carry

    zeros = ops.zeros((rows, h), steps.dtype)
    _, (states, cells, activated) = ops.scan(forward_step, (zeros, zeros, ops.zeros_like(steps[0])), steps)

    def gradient(*args, upstream=None):
        if upstream is None:
            (upstream,) = args                                                                # dL/dh_t [L, D*B, h]
        previous_cells = ops.concatenate([ops.expand_dims(zeros, 0), cells[:-1]], axis=0)   # c_{t-1}
        transposed = ops.transpose(recurrent, (0, 2, 1))                                     # Uᵀ [D, 4h, h]
        # one scanned tensor per step: Keras's TF scan fails on several of unknown length (keras 3.15)
        inputs = ops.concatenate([upstream, activated, cells, previous_cells], axis=-1)      # [L, D*B, 7h]

        def backward_step(carry, item):
            dh_next, dc_next, _ = carry
            dh_t, i, f, g, o, c, c_prev = ops.split(item, [h, 2 * h, 3 * h, 4 * h, 5 * h, 6 * h], axis=-1)
            dz, dc_prev = _step_gradient(ops.add(dh_t, dh_next), dc_next, i, f, g, o, c, c_prev)  # [D*B, 4h]
            carry = (times_recurrent(dz, transposed), dc_prev, dz)                             # dh_{t-1}, dc_{t-1}
            return carry, carry

        _, (_, _, dz) = ops.scan(backward_step, (zeros, zeros, ops.zeros_like(steps[0])), inputs, reverse=True)
        previous_states = ops.concatenate([ops.expand_dims(zeros, 0), states[:-1]], axis=0)  # h_{t-1}
        def by_direction(t):  # [L, D*B, n] -> [D, L*B, n]
            width = ops.shape(t)[-1]
            return ops.reshape(ops.transpose(ops.reshape(t, (-1, directions, batch, width)), (1, 0, 2, 3)),
                               (directions, -1, width))

        d_recurrent = ops.matmul(ops.transpose(by_direction(previous_states), (0, 2, 1)), by_direction(dz))
        return dz, d_recurrent                                                               # [L, D*B, 4h], [D, h, 4h]

    return states, gradient


def lstm_states(steps, recurrent):
    """`lstm_loop`'s states without its gradient's bookkeeping (inference): `[L, D*B, 4h]`, `[D, h, 4h]` ->
    `[L, D*B, h]`."""
    directions, h = ops.shape(recurrent)[0], ops.shape(recurrent)[1]
    rows = ops.shape(steps)[1]
    batch = rows // directions

    def step(carry, z_x):
        h_prev, c_prev = carry
        product = ops.reshape(ops.matmul(ops.reshape(h_prev, (directions, batch, h)), recurrent), (rows, 4 * h))
        i, f, g, o = _gates(ops.add(z_x, product))
        c = ops.add(ops.multiply(f, c_prev), ops.multiply(i, g))
        h_t = ops.multiply(o, ops.tanh(c))
        return (h_t, c), (h_t, c)  # Keras's TF scan: outputs shaped as the carry

    zeros = ops.zeros((rows, h), steps.dtype)
    return ops.scan(step, (zeros, zeros), steps)[1][0]


def packed_lstm(z, recurrent, live):
    """Inference over packed sequences: the states of every real token, no product on padding.

    Args:
        z: `[D, N, 4h]`, X W + b of the N real tokens of each direction, time-major: step t's rows are
            `offset_t ... offset_t + n_t - 1` (rows sorted longest first, so the live rows of a step are
            the first n_t).
        recurrent: a list of D kernels U `[h, 4h]`, one per direction.
        live: `[T]` int32, n_t: how many rows are still inside their sentence at step t (non-increasing).

    Returns:
        h_t of every real token `[D, N, h]`, in z's order.
    """
    states, _, _ = _packed_forward(z, _each_direction(recurrent), ops.shape(recurrent[0])[0], live, keep_gates=False)
    return states


def _each_direction(kernels):
    """`state` `[D, n, k]` -> `[D, n, m]`: each direction's rows times its own kernel `[k, m]` (a list of D),
    one plain product each. On a CPU under TensorFlow one batched product of the same shapes took 1.5 times
    as long at 32 rows and 3 times at 8 (`BatchMatMulV2` against two `MatMul`s and their stacking, AMD EPYC
    25/1), and the packed loops run one such product a step, forward and, in training, backward."""
    def times(state):
        return ops.stack([ops.matmul(part, kernel) for part, kernel in zip(ops.unstack(state, len(kernels)), kernels)])
    return times


@ops.custom_gradient
def packed_lstm_loop(z, recurrent, live):
    """`packed_lstm` with its hand-written gradient (training): a second loop backwards in time over the
    same live rows, whose only product per step is dz_t Uᵀ; ∂U is then one product over the real tokens.
    `recurrent` is `[D, h, 4h]` here (its gradient is one tensor); each step multiplies each direction by
    its own kernel (`_each_direction`)."""
    directions, h = ops.shape(recurrent)[0], ops.shape(recurrent)[1]
    kernels = ops.unstack(recurrent, recurrent.shape[0])
    states, (full_states, cells, gates), shape = _packed_forward(z, _each_direction(kernels), h, live, keep_gates=True)
    steps, rows, tokens, index = shape

    def gradient(*args, upstream=None):
        if upstream is None:
            (upstream,) = args                                                                # dL/dh [D, N, h]
        zeros = ops.zeros((directions, rows, h), upstream.dtype)
        no_gates = ops.zeros((directions, rows, 4 * h), upstream.dtype)
        previous_cells = ops.concatenate([ops.expand_dims(zeros, 0), cells[:-1]], axis=0)    # c_{t-1} [T, D, R, h]
        upstream_steps = _unpack(upstream, index)                                            # dL/dh_t [T, D, R, h]
        times_transposed = _each_direction([ops.transpose(kernel) for kernel in kernels])     # · Uᵀ [4h, h]

        # The step reads its rows of the saved tensors in place: scanning them would copy all of them twice a
        # call (Keras's TF scan takes one tensor of unknown length, so one [T, D, R, 7h] concatenation, then
        # its unstacking); the profile of a training epoch on one thread: ConcatV2 1.7 -> 1.0 s.
        def backward_step(carry, t):
            dh_next, dc_next, _ = carry
            n = live[t]
            i, f, g, o = ops.split(gates[t, :, :n], 4, axis=-1)
            dz, dc_prev = _step_gradient(ops.add(upstream_steps[t, :, :n], dh_next[:, :n]), dc_next[:, :n],
                                         i, f, g, o, cells[t, :, :n], previous_cells[t, :, :n])
            carry = (_refill(times_transposed(dz), dh_next), _refill(dc_prev, dc_next),  # dh_{t-1}, dc_{t-1}
                     _refill(dz, no_gates))                                                  # dz_t [D, R, 4h]
            return carry, carry

        _, (_, _, dz) = ops.scan(backward_step, (zeros, zeros, no_gates), ops.arange(steps, dtype="int32"),
                                 reverse=True)                                               # [T, D, R, 4h]
        previous_states = ops.concatenate([ops.expand_dims(zeros, 0), full_states[:-1]], axis=0)  # h_{t-1}
        dz = _pack(dz, tokens)                                                               # [D, N, 4h]
        d_recurrent = ops.matmul(ops.transpose(_pack(previous_states, tokens), (0, 2, 1)), dz)  # Σ_t h_{t-1}ᵀ dz_t
        return dz, d_recurrent, None

    return states, gradient


def _packed_forward(z, times_recurrent, h, live, keep_gates):
    """The packed loop: h_t `[D, N, h]`, and what its gradient needs when `keep_gates` (else Nones);
    `times_recurrent(state)`: h_{t-1} U of the live states `[D, n, h]`."""
    directions = ops.shape(z)[0]
    steps = ops.shape(live)[0]
    rows = ops.max(ops.concatenate([live, ops.zeros((1,), "int32")]))                      # R = n_0
    offsets = ops.cumsum(live) - live
    real = ops.expand_dims(ops.arange(rows, dtype="int32"), 0) < ops.expand_dims(live, 1)   # [T, R]
    tokens = ops.reshape(ops.nonzero(ops.reshape(real, (-1,)))[0], (-1,))                  # time-major, N
    index = ops.where(real, ops.expand_dims(offsets, 1) + ops.arange(rows, dtype="int32"),
                      ops.shape(z)[1])                                                        # [T, R] into z's rows

    def step(carry, item):
        h_prev, c_prev = carry[0], carry[1]
        offset, n = item[0], item[1]
        i, f, g, o = _gates(ops.add(ops.slice(z, (0, offset, 0), (directions, n, 4 * h)),
                                    times_recurrent(h_prev[:, :n])))                         # [D, n, h] each
        c = ops.add(ops.multiply(f, c_prev[:, :n]), ops.multiply(i, g))
        h_t = ops.multiply(o, ops.tanh(c))
        new = (_refill(h_t, h_prev), _refill(c, c_prev))
        if keep_gates:
            new += (_refill(ops.concatenate([i, f, g, o], axis=-1), carry[2]),)              # [D, R, 4h]
        return new, new  # Keras's TF scan: outputs shaped as the carry

    zeros = ops.zeros((directions, rows, h), z.dtype)
    start = (zeros, zeros) + ((ops.zeros((directions, rows, 4 * h), z.dtype),) if keep_gates else ())
    outputs = ops.scan(step, start, ops.stack([offsets, live], axis=1))[1]                   # each [T, D, R, .]
    states = _pack(outputs[0], tokens)                                                        # [D, N, h]
    if not keep_gates:
        return states, None, None
    return states, outputs, (steps, rows, tokens, index)


def _refill(live_rows, full):
    """`full` `[D, R, k]` with its first n rows replaced by `live_rows` `[D, n, k]`."""
    return ops.concatenate([live_rows, full[:, ops.shape(live_rows)[1]:]], axis=1)


def _pack(per_step, tokens):
    """`[T, D, R, k]` (every row at every step) -> `[D, N, k]`: the live rows, time-major."""
    shape = ops.shape(per_step)
    flat = ops.reshape(ops.transpose(per_step, (1, 0, 2, 3)), (shape[1], -1, shape[3]))     # [D, T*R, k]
    return ops.take(flat, tokens, axis=1)


def _unpack(packed, index):
    """`[D, N, k]` -> `[T, D, R, k]`, zeros where a row is not live (`index` `[T, R]` points past N)."""
    shape = ops.shape(packed)
    padded = ops.concatenate([packed, ops.zeros((shape[0], 1, shape[2]), packed.dtype)], axis=1)  # [D, N + 1, k]
    return ops.transpose(ops.take(padded, index, axis=1), (1, 0, 2, 3))
