"""How long the vector cache's SHA-256 check takes at the size of the largest catalogue set's index.

The cache checks the SHA-256 of `vectors.f32` and `words.txt` each time an index is opened
(`zoo.data.vectors.index.VectorIndex`). This script writes a matrix of the fastText crawl-300d-2M size
(2,000,000 x 300 float32, 2.4 GB) and a word list of 2,000,000 words into a temporary folder, times
`file_sha256` on each (memory-mapped, as the cache does) and removes the folder.

    python scripts/vector_cache_hashing.py [--rows 2000000] [--dim 300] [--repeat 3] [--dir /tmp]

Prints the seconds per hash (the first pass reads the file through the page cache it was just written to;
`--drop` would need root, so the figure is for a file in memory, as a cache opened again soon after is) and
the CPU model (`lscpu`).
"""

import os
import shutil
import subprocess
import tempfile
import time

import numpy as np


from zoo.commands.parsing import CommandParser
from zoo.data.vectors.index import file_sha256  # noqa: E402 (after the path set-up above)


def write_files(folder, rows, dim):
    """Writes `vectors.f32` (random float32 rows, in blocks) and `words.txt` (`w0`, `w1`, ...)."""
    rng = np.random.default_rng(0)
    with open(os.path.join(folder, "vectors.f32"), "wb") as f:
        for start in range(0, rows, 100_000):
            f.write(rng.normal(0, 0.3, (min(100_000, rows - start), dim)).astype("<f4").tobytes())
    with open(os.path.join(folder, "words.txt"), "wb") as f:
        f.write("\n".join(f"w{i}" for i in range(rows)).encode("utf-8"))


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no lscpu)"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return f"{fields.get('Model name', '?').strip()}, {fields.get('CPU(s)', '?').strip()} CPU(s)"


def main(argv=None):
    parser = CommandParser(prog="vector_cache_hashing.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the files (default: the system's temp dir)")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="nli-zoo-hash-", dir=args.dir)
    try:
        write_files(folder, args.rows, args.dim)
        print(f"CPU: {cpu_model()}")
        for name in ("vectors.f32", "words.txt"):
            path = os.path.join(folder, name)
            times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                file_sha256(path)
                times.append(time.perf_counter() - started)
            size = os.path.getsize(path)
            print(f"{name}: {size / 1e9:.2f} GB, SHA-256 in {min(times):.2f} s (best of {args.repeat}; all: "
                  f"{', '.join(f'{t:.2f}' for t in times)}), {size / 1e9 / min(times):.2f} GB/s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
