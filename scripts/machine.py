"""The machine a speed figure was taken on: its CPU, its thread settings, and its own fp32 GEMM rate on the
LSTM's matrix shapes (`zoo.measurements.machine`, where what is measured is described).

    python scripts/machine.py                    # describe this machine and measure its GEMM rates
    python scripts/machine.py --json machine.json
    python scripts/machine.py --record           # append the GEMM peak to results/machine/<machine id>.jsonl

It prints `lscpu`'s model name, vendor, family / model / stepping, the flags that decide the matrix
kernels (avx2, fma, avx512f, avx512_vnni, avx512_bf16, avx512_fp16, amx_*), L2 a core, the thread
settings (`TF_NUM_INTRAOP_THREADS`, `TF_NUM_INTEROP_THREADS`, `OMP_NUM_THREADS`, `TF_ENABLE_ONEDNN_OPTS`)
and TensorFlow's fp32 MatMul rate on the LSTM's shapes, on one thread and on every core, each in a fresh
process; the best rate at a thread count is that count's GEMM peak; last, this machine's few-rows loop for one
pair (`nli-zoo tune`'s choice, or "not tuned: default steps").
"""

import sys

from recording import add_record_options, save
from zoo.commands.parsing import COUNT, FILE_TO_WRITE, SECONDS, CommandParser
from zoo.fileio import write_json
from zoo.measurements import machine


def tuned_line():
    """This machine's few-rows loop: `nli-zoo tune`'s choice, or "not tuned: default steps"."""
    from zoo.export.loop_tuning import TuningFileError, record_path, tuned_loop  # TensorFlow: after the GEMM children

    try:
        choice = tuned_loop()
    except TuningFileError as error:
        return f"few-rows loop: unreadable tuning record: {error}"
    if choice.source != "tuned":
        return f"few-rows loop: not tuned: default {choice.design} (`nli-zoo tune` records {record_path()})"
    return f"few-rows loop: {choice.describe()}, {record_path()}"


def main(argv=None):
    parser = CommandParser(prog="machine.py", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=SECONDS, default=1.0, help="seconds per GEMM shape (0: do not measure)")
    parser.add_argument("--threads", type=COUNT, nargs="+", default=None,
                        help="thread counts to measure (default: 1 and every core)")
    parser.add_argument("--json", type=FILE_TO_WRITE, default=None, help="also write the description to this JSON file")
    add_record_options(parser)
    args = parser.parse_args(argv)
    if args.record and not args.seconds:
        parser.error("--record needs the GEMM measurement (--seconds above 0)")
    info = machine.describe(args.seconds, args.threads)
    print("\n".join(machine.lines(info) + [tuned_line()]))
    if args.json:
        write_json(args.json, info)
    figures = {f"gemm_peak/{threads}": [peak] for threads, peak in info["peak_gflops"].items()}
    figures.update({f"gemm/{threads}/{shape}": [rate] for threads, rates in info["gemm"].items()
                    for shape, rate in rates.items()})
    save(args, "machine", figures, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
