"""The tables of README.md and docs/ rendered from the records under `results/`
(`zoo.measurements.record`): each table between the lines `<!-- results: TABLE_ID -->` and
`<!-- /results -->`, a row per CPU (each figure from the latest line of the machine's file that has it),
so a figure in the docs is the figure in its record.

Tables (`TABLES`): `serving` (the served SavedModel of ESIM at paper size against the PyTorch reference),
`training` (training speed against the reference), `suite` (the test suite's time), `loop-crossover` (the
packed loop over TensorFlow's LSTM kernel by batch size), `machines` (the CPUs measured and their GEMM
peak), `learning-check` (whether the models learn from the first epoch) and `esim-level` (the zoo's ESIM
against the reference, trained alike). `render_blocks(text, results)` fills every block of a page.
"""

import re

from zoo.errors import UserError
from zoo.measurements.record import value

BLOCK = re.compile(r"(<!-- results: ([\w-]+) -->\n)(.*?)(<!-- /results -->)", flags=re.S)


class RenderError(UserError):
    """A page asks for a table that does not exist."""


def latest(results, benchmark):
    """`[(machine id, its latest view)]` of one benchmark, by machine id: the machine's last record, each
    figure from the last record that has it (one command measures one thread count: the lines of a file
    together make the machine's row)."""
    out = []
    for machine, records in sorted(results.get(benchmark, {}).items()):
        if records:
            figures = {}
            for record in records:
                figures.update(record["figures"])
            out.append((machine, {**records[-1], "figures": figures}))
    return out


def cpu_cell(record):
    """The CPU of a row: "AMD EPYC 25/17"."""
    m = record["machine"]
    return f"{m.get('model_name') or m['id']} {m.get('family', '')}/{m.get('model', '')}".strip()


def number(x, digits):
    return f"{x:,.{digits}f}"


def spread_cell(record, name, digits, unit=""):
    """A figure as "median (min-max)", "min-max" when only the range is known, "" when absent."""
    spread = record["figures"].get(name)
    if not spread:
        return ""
    low, high, median = spread["min"], spread["max"], spread["median"]
    ranged = low is not None and high is not None and high > low
    if median is None:
        return f"{number(low, digits)}-{number(high, digits)}{unit}" if ranged else ""
    text = number(median, digits) + unit
    return text + (f" ({number(low, digits)}-{number(high, digits)})" if ranged else "")


def versus(zoo, reference, digits, unit, faster_is_lower):
    """"zoo / reference unit, **ratio**": the ratio is the zoo's speed over the reference's."""
    if zoo is None:
        return ""
    if reference is None:
        return f"{number(zoo, digits)}{unit}"
    ratio = reference / zoo if faster_is_lower else zoo / reference
    return f"{number(zoo, digits)} / {number(reference, digits)}{unit}, **{ratio:.2f}x**"


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def both_cores(record):
    return record["machine"].get("cores") or 2


def serving(results):
    """ESIM served at paper size, zoo / reference, one row per CPU; both cores: the zoo's layout (`inter:N`)
    against the reference on N threads."""
    columns = [("p50_ms", 2, " ms", True, "batch-1 p50"), ("b32_pairs_per_s", 0, "", False, "batch 32, pairs/s"),
               ("b256_pairs_per_s", 0, "", False, "batch 256, pairs/s")]
    header = ["CPU"] + [f"{title}, {where}: zoo / reference" for *_, title in columns
                        for where in ("one thread", "both cores")]
    rows = []
    for _, record in latest(results, "serving"):
        cores = both_cores(record)
        row = [cpu_cell(record)]
        for metric, digits, unit, lower, _ in columns:
            for zoo_threads, reference_threads in (("1", "1"), (f"inter:{cores}", str(cores))):
                row.append(versus(value(record, f"esim/saved_model/{zoo_threads}/{metric}"),
                                  value(record, f"esim/torch/{reference_threads}/{metric}"), digits, unit, lower))
        rows.append(row)
    return table(header, rows)


def training_sizes(record, threads):
    found = {int(m.group(1)) for name in record["figures"]
             if (m := re.fullmatch(rf"esim/{re.escape(threads)}/(\d+)/steps_pairs_per_s", name))}
    return sorted(found)


def training(results):
    """ESIM trained through `nli-zoo train`'s path against the reference, one row per CPU: steps and whole
    epoch pairs/s on one thread and on both cores."""
    header = ["CPU", "pairs", "one thread: steps / epoch / reference pairs/s", "zoo / reference",
              "both cores: steps / epoch / reference pairs/s", "zoo / reference"]
    rows = []
    for _, record in latest(results, "training"):
        sizes = training_sizes(record, "1") or training_sizes(record, str(both_cores(record)))
        if not sizes:
            continue
        size, row = sizes[0], [cpu_cell(record), f"{sizes[0]:,}"]
        for threads in ("1", str(both_cores(record))):
            steps = value(record, f"esim/{threads}/{size}/steps_pairs_per_s")
            epoch = value(record, f"esim/{threads}/{size}/epoch_pairs_per_s")
            reference = value(record, f"torch/{threads}/{size}/pairs_per_s")
            figures = [f for f in (steps, epoch, reference) if f is not None]
            row.append(" / ".join(number(f, 1) for f in figures))
            row.append(f"**{steps / reference:.2f}x / {epoch / reference:.2f}x**"
                       if None not in (steps, epoch, reference) else "")
        rows.append(row)
    return table(header, rows)


def minutes(seconds):
    return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s" if seconds is not None else ""


def suite(results):
    """The test suite's wall and CPU time, one row per CPU."""
    rows = []
    for _, record in latest(results, "suite"):
        tests, cpu = value(record, "tests"), value(record, "cpu_s")
        rows.append([cpu_cell(record), "" if tests is None else f"{tests:,.0f}", minutes(value(record, "wall_s")),
                     "" if cpu is None else f"{cpu:,.0f} s", record.get("date") or ""])
    return table(["CPU", "tests", "wall time", "CPU time", "day"], rows, ["---", "---:", "---:", "---:", "---"])


def crossover(results):
    """The packed loop's time over TensorFlow's LSTM kernel's (above 1: the kernel is faster) by batch size,
    a row per CPU and thread layout."""
    keyed = re.compile(r"(inter:\d+)/(\d+)/packed_over_kernel")
    measured = latest(results, "loop-crossover")
    batches = sorted({int(m.group(2)) for _, r in measured for name in r["figures"] if (m := keyed.fullmatch(name))})
    rows = []
    for _, record in measured:
        layouts = sorted({m.group(1) for name in record["figures"] if (m := keyed.fullmatch(name))},
                         key=lambda t: int(t.split(":")[1]))
        for layout in layouts:
            label = "one thread" if layout == "inter:1" else f"1 intra-op, {layout.split(':')[1]} inter-op threads"
            cells = []
            for batch in batches:
                ratio = value(record, f"{layout}/{batch}/packed_over_kernel")
                kernel = value(record, f"{layout}/{batch}/kernel_ms")
                packed = value(record, f"{layout}/{batch}/packed_ms")
                cell = "" if ratio is None else f"{ratio:.2f}x"
                if cell and kernel is not None and packed is not None:
                    cell += f" ({packed:.2f} / {kernel:.2f} ms)"
                cells.append(cell)
            rows.append([cpu_cell(record), label] + cells)
    return table(["CPU", "threads"] + [f"batch {b}: packed / kernel" for b in batches], rows,
                 ["---", "---"] + ["---:"] * len(batches))


def machines(results):
    """The CPUs measured: the facts of each machine's latest record (its `machine` record first) and its GEMM
    peak on one thread and on every core."""
    found = {}
    for benchmark in sorted(results, key=lambda b: b == "machine"):  # the machine benchmark's facts win
        for machine, record in latest(results, benchmark):
            if not record["machine"].get("gpu"):  # a GPU's records name the GPU, not a CPU to list here
                found[machine] = record
    rows = []
    for machine, record in sorted(found.items()):
        m, cores = record["machine"], both_cores(record)
        peaks = []
        for threads in ("1", str(cores)):
            cell = spread_cell(record, f"gemm_peak/{threads}", 0) if record["benchmark"] == "machine" else ""
            if not cell and m.get("peak_gflops", {}).get(threads) is not None:
                cell = number(m["peak_gflops"][threads], 0)
            peaks.append(cell)
        l2 = m.get("l2_per_core_kib")
        l2_cell = "" if l2 is None else (f"{l2 / 1024:g} MiB" if l2 >= 1024 else f"{l2:g} KiB")
        rows.append([cpu_cell(record), f"`{machine}`", f"{m.get('family', '')} / {m.get('model', '')}",
                     ", ".join(m.get("flags") or []), l2_cell, str(m.get("cores") or "")] + peaks)
    return table(["CPU", "machine id", "family / model", "flags", "L2 a core", "cores",
                  "GEMM peak, one thread, GFLOP/s", "GEMM peak, every core, GFLOP/s"], rows,
                 ["---", "---", "---", "---", "---:", "---:", "---:", "---:"])


def learning_check(results):
    """Whether each model learns from the first epoch (`scripts/learning_check.py`): a row per model, CPU and
    conditions (the record's notes), each seed's training loss by epoch, held-out accuracy and verdict; a
    later record of the same seed replaces an earlier one."""
    runs = {}  # (model, CPU, conditions) -> {seed: (losses, accuracy, learns)}
    for _, records in sorted(results.get("learning_check", {}).items()):
        for record in records:
            seed = value(record, "seed")
            models = {name.split("/")[0] for name in record["figures"] if name.endswith("/held_out_accuracy")}
            for model in sorted(models):
                epochs = sorted(int(m.group(1)) for name in record["figures"]
                                if (m := re.fullmatch(rf"{re.escape(model)}/train_loss/(\d+)", name)))
                losses = [value(record, f"{model}/train_loss/{epoch}") for epoch in epochs]
                learns = value(record, f"{model}/learns")
                key = (model, cpu_cell(record), record.get("notes") or "")
                runs.setdefault(key, {})[None if seed is None else int(seed)] = (
                    losses, value(record, f"{model}/held_out_accuracy"), learns)
    rows = []
    for (model, cpu, conditions), seeds in runs.items():
        order = sorted(seeds, key=lambda s: -1 if s is None else s)
        accuracies = [seeds[s][1] for s in order if seeds[s][1] is not None]
        verdicts = {seeds[s][2] for s in order}
        rows.append([f"`{model}`", cpu, conditions, ", ".join("?" if s is None else str(s) for s in order),
                     "; ".join(", ".join(number(x, 3) for x in seeds[s][0]) for s in order),
                     ", ".join(number(x, 3) for x in accuracies)
                     + (f" (mean {number(sum(accuracies) / len(accuracies), 3)})" if len(accuracies) > 1 else ""),
                     "yes" if verdicts == {1.0} else "no" if verdicts == {0.0} else
                     ", ".join("" if seeds[s][2] is None else "yes" if seeds[s][2] else "no" for s in order)])
    return table(["model", "CPU", "conditions", "seeds", "training loss by epoch (each seed)", "held-out accuracy",
                  "learns"], rows, ["---", "---", "---", "---:", "---", "---:", "---"])


def esim_level(results):
    """The zoo's ESIM and the PyTorch reference trained alike (`scripts/esim_vs_reference.py`), a row per
    CPU and conditions: each side's mean test accuracy and one-more-run interval, the difference's run-level
    interval and p-value."""
    rows = []
    for _, records in sorted(results.get("esim_level", {}).items()):
        for record in records:
            cells = []
            for side in ("zoo", "reference"):
                spread = record["figures"].get(f"{side}/test_accuracy") or {}
                mean = value(record, f"{side}/test_accuracy_mean")
                cells.append("" if not spread else
                             f"{number(100 * (mean if mean is not None else spread['median']), 2)}"
                             f" ({spread['rounds']} seeds, {number(100 * spread['min'], 2)}-"
                             f"{number(100 * spread['max'], 2)})")
            low, high = value(record, "difference/runs_interval_low"), value(record, "difference/runs_interval_high")
            p = value(record, "difference/runs_p_value")
            cells.append("" if low is None else f"[{100 * low:+.2f}, {100 * high:+.2f}]")
            cells.append("" if p is None else f"{p:.2g}")
            rows.append([cpu_cell(record), record.get("notes") or ""] + cells)
    return table(["CPU", "conditions", "zoo: test accuracy, mean (seeds, range)", "reference",
                  "zoo − reference: run-level 95% interval, points", "p"], rows,
                 ["---", "---", "---:", "---:", "---:", "---:"])


TABLES = {"serving": serving, "training": training, "suite": suite, "loop-crossover": crossover,
          "machines": machines, "learning-check": learning_check, "esim-level": esim_level}


def render(table_id, results):
    """The Markdown table `table_id` from `results` (`record.load_results`)."""
    if table_id not in TABLES:
        raise RenderError(f"no table {table_id!r}: the tables are {', '.join(TABLES)}")
    return TABLES[table_id](results)


def render_blocks(text, results, where="the page"):
    """`text` with every results block refilled from `results`; returns `(new text, [table ids])`."""
    ids = []

    def fill(match):
        ids.append(match.group(2))
        try:
            body = render(match.group(2), results)
        except RenderError as error:
            line = text.count("\n", 0, match.start()) + 1
            raise RenderError(f"{where}, line {line}: {error}") from None
        return f"{match.group(1)}{body}\n{match.group(4)}"

    return BLOCK.sub(fill, text), ids


def stale_tables(text, results, where="the page"):
    """The table ids of `text` whose block differs from what `results` renders."""
    stale = []
    for match in BLOCK.finditer(text):
        rendered, _ = render_blocks(match.group(0), results, where)
        if rendered != match.group(0):
            stale.append(match.group(2))
    return stale
