"""The diagnostics report as text tables, JSON, PNG charts (matplotlib, Agg) and TensorBoard scalars."""

import json
import os
import re

import numpy as np

from zoo.fileio import atomic_path, atomic_write
from zoo.plotting import pyplot

SET_TITLES = {"breaking_nli": "Breaking NLI (Glockner et al. 2018)", "hans": "HANS (McCoy et al. 2019)",
              "snli_hard": "SNLI hard (Gururangan et al. 2018)", "stress_tests": "Stress tests (Naik et al. 2018)",
              "anli": "ANLI (Nie et al. 2020)", "behaviour": "Behaviour tests (CheckList-style, generated)",
              "artifacts": "Artifacts: baselines that read less than the model"}
JSON_FILE = "diagnostics.json"
RUN_NAME = "diagnostics"


# Text ---------------------------------------------------------------------------------------------------
def _acc(value):
    return "-" if value is None else f"{value:.4f}"


def _cell(e):
    """`0.1234 (1,147)` of an entry, `-` for None."""
    if not e:
        return "-"
    return f"{_acc(e['accuracy'])} ({e['examples']:,})"


def table(headers, rows):
    """Aligned text lines: the first column left-aligned, the others right-aligned."""
    rows = [[str(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line([str(h) for h in headers])] + [line(r) for r in rows]


def _title(name, section, extra=""):
    source = section.get("source") or section.get("test_source")
    where = f" [{source}]" if source else ""
    return f"== {SET_TITLES[name]}{where}{extra}"


def _headline(section):
    return f"accuracy {_acc(section['accuracy'])} on {section['examples']:,} pairs"


def _format_breaking_nli(section):
    lines = [_title("breaking_nli", section), _headline(section)]
    lines += table(["category", "accuracy", "pairs"],
                   [[k, _acc(v["accuracy"]), f"{v['examples']:,}"] for k, v in section["per_category"].items()])
    lines.append("per gold label: " + ", ".join(f"{k} {_cell(v)}" for k, v in section["per_label"].items()))
    return lines


def _format_hans(section):
    lines = [_title("hans", section), _headline(section) + " (two-way: neutral and contradiction predictions "
                                                            "count as non-entailment)"]
    lines += table(["heuristic", "gold entailment", "gold non-entailment", "all"],
                   [[h, _cell(v["entailment"]), _cell(v["non-entailment"]), _cell(v["all"])]
                    for h, v in section["per_heuristic"].items()])
    lines.append("")
    lines += table(["subcase", "heuristic", "gold entailment", "gold non-entailment"],
                   [[s, v["heuristic"], _cell(v["entailment"]), _cell(v["non-entailment"])]
                    for s, v in section["per_subcase"].items()])
    for gold, predicted in section["predicted"].items():
        lines.append(f"gold {gold}: predicted " + ", ".join(f"{k} {n:,}" for k, n in predicted.items()))
    return lines


def _format_snli_hard(section):
    lines = [_title("snli_hard", section), _headline(section)]
    if section["full_test_accuracy"] is None:
        lines.append("full test accuracy: not given")
    else:
        lines.append(f"full test accuracy {_acc(section['full_test_accuracy'])} (hard minus full: "
                     f"{-section['gap']:+.4f})")
    lines.append("per gold label: " + ", ".join(f"{k} {_cell(v)}" for k, v in section["per_label"].items()))
    return lines


def _format_stress_tests(section):
    lines = [_title("stress_tests", section), _headline(section) + " (all files)"]
    lines += table(["test", "matched", "mismatched", "all"],
                   [[t, _cell(v["matched"]), _cell(v["mismatched"]), _cell(v["all"])]
                    for t, v in section["tests"].items()])
    for test, v in section["tests"].items():
        if len(v["variants"]) > 1:
            lines.append(f"{test} by variant:")
            lines += ["  " + line for line in table(
                ["variant", "matched", "mismatched", "all"],
                [[name, _cell(s.get("matched")), _cell(s.get("mismatched")), _cell(s.get("all"))]
                 for name, s in v["variants"].items()])]
    return lines


def _format_anli(section):
    lines = [_title("anli", section, f" ({section['split']} split)"), _headline(section) + " (all rounds)"]
    lines += table(["round", "accuracy", "pairs"],
                   [[r, _acc(v["accuracy"]), f"{v['examples']:,}"] for r, v in section["rounds"].items()])
    return lines


def _format_behaviour(section):
    lines = [_title("behaviour", section, f" (seed {section['seed']}, up to {section['size']} pairs per test)"),
             f"failure rate {_acc(section['failure_rate'])} over {section['examples']:,} pairs"]
    rows = []
    for name, t in section["tests"].items():
        expected = "/".join(sorted({label for tpl in t["templates"].values() for label in tpl["expected"]}))
        changed = "-" if t["changed"] is None else _acc(t["changed"]["rate"])
        top = max(t["predicted"], key=t["predicted"].get) if t["examples"] else "-"
        share = f"{top} {100 * t['predicted'][top] / t['examples']:.0f}%" if t["examples"] else "-"
        rows.append([name, f"{t['examples']:,}", _acc(t["failure_rate"]), changed, share, expected])
    lines += table(["test", "pairs", "failure rate", "changed", "most predicted", "expected"], rows)
    lines.append("(changed: share of perturbed pairs predicted unlike their clean pair; a low failure rate with "
                 "one label predicted nearly always is no skill)")
    for name, t in section["tests"].items():
        if not t["failing"]:
            continue
        lines.append(f"{name}: {t['capability']}")
        for f in t["failing"]:
            lines.append(f"  FAIL [{f['template']}] {f['premise']} => {f['hypothesis']}")
            lines.append(f"       expected {'/'.join(f['expected'])}, predicted {f['predicted']} "
                         f"({f['probability']:.2f}): {f['reason']}")
    return lines


def _format_artifacts(section):
    model = section["model"]
    lines = [_title("artifacts", section), f"model accuracy {_acc(model['accuracy'])} on {section['examples']:,} "
                                            "test pairs"]
    rows = []
    for name, b in section["baselines"].items():
        share = "-" if b["share_of_model"] is None else f"{100 * b['share_of_model']:.1f}%"
        rows.append([name, b["kind"], _acc(b["accuracy"]), share, _cell(b["hard"]), _cell(b["easy"])])
    lines += table(["baseline", "kind", "accuracy", "% of model's", "model on its errors", "model on its hits"],
                   rows)
    lines.append("(model on its errors: the model's accuracy on the pairs the baseline gets wrong, i.e. hard for "
                 "the baseline)")
    return lines


FORMATTERS = {"breaking_nli": _format_breaking_nli, "hans": _format_hans, "snli_hard": _format_snli_hard,
              "stress_tests": _format_stress_tests, "anli": _format_anli, "behaviour": _format_behaviour,
              "artifacts": _format_artifacts}


def format_report(report):
    """The whole report as printable text: one block per set, then the sets not given."""
    blocks = []
    for name, section in report["sets"].items():
        blocks.append("\n".join(FORMATTERS[name](section)))
    if report.get("skipped"):
        blocks.append("not run (not given): " + ", ".join(report["skipped"]))
    return "\n\n".join(blocks)


# Scalars ------------------------------------------------------------------------------------------------
def _tag(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text)).strip("_") or "_"


def scalars(report):
    """`{tag: float}` of every figure of the report (TensorBoard tags, `set/...`)."""
    out = {}

    def put(tag, value):
        if value is not None:
            out[tag] = float(value)

    sets = report["sets"]
    if "breaking_nli" in sets:
        s = sets["breaking_nli"]
        put("breaking_nli/accuracy", s["accuracy"])
        for k, v in s["per_category"].items():
            put(f"breaking_nli/category/{_tag(k)}", v["accuracy"])
    if "hans" in sets:
        s = sets["hans"]
        put("hans/accuracy", s["accuracy"])
        for h, v in s["per_heuristic"].items():
            for gold in ("entailment", "non-entailment"):
                put(f"hans/{_tag(h)}/{gold}", (v[gold] or {}).get("accuracy"))
        for sub, v in s["per_subcase"].items():
            put(f"hans/subcase/{_tag(sub)}", v["all"]["accuracy"])
    if "snli_hard" in sets:
        put("snli_hard/accuracy", sets["snli_hard"]["accuracy"])
        put("snli_hard/full_test_accuracy", sets["snli_hard"]["full_test_accuracy"])
    if "stress_tests" in sets:
        s = sets["stress_tests"]
        put("stress_tests/accuracy", s["accuracy"])
        for t, v in s["tests"].items():
            for part in ("matched", "mismatched", "all"):
                put(f"stress_tests/{_tag(t)}/{part}", (v[part] or {}).get("accuracy"))
    if "anli" in sets:
        put("anli/accuracy", sets["anli"]["accuracy"])
        for r, v in sets["anli"]["rounds"].items():
            put(f"anli/{_tag(r)}", v["accuracy"])
    if "behaviour" in sets:
        s = sets["behaviour"]
        put("behaviour/failure_rate", s["failure_rate"])
        for t, v in s["tests"].items():
            put(f"behaviour/failure_rate/{_tag(t)}", v["failure_rate"])
    if "artifacts" in sets:
        s = sets["artifacts"]
        put("artifacts/model_accuracy", s["model"]["accuracy"])
        for name, b in s["baselines"].items():
            put(f"artifacts/{name}/accuracy", b["accuracy"])
            put(f"artifacts/{name}/share_of_model", b["share_of_model"])
            put(f"artifacts/{name}/model_accuracy_on_its_errors", b["hard"]["accuracy"])
    return out


def write_scalars(report, logdir, step=0):
    """Writes `scalars(report)` as TensorBoard scalars under `LOGDIR/diagnostics` at `step`; returns the folder."""
    import tensorflow as tf  # here: 3.7 s to import, and the rest of the report needs only numpy

    folder = os.path.join(logdir, RUN_NAME)
    writer = tf.summary.create_file_writer(folder)
    with writer.as_default():
        for tag, value in scalars(report).items():
            tf.summary.scalar(tag, value, step=int(step))
    writer.flush()
    writer.close()
    return folder


def write_json(report, out_dir):
    """Writes the report to `OUT_DIR/diagnostics.json`; returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, JSON_FILE)
    with atomic_write(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, ensure_ascii=False, default=float)
        f.write("\n")
    return path


# Charts -------------------------------------------------------------------------------------------------
def _bars(title, groups, series, ylabel="accuracy", limit=1.0, reference=None):
    """A grouped bar chart: `groups` on the x axis, `series` `{name: [value or None per group]}`."""

    plt = pyplot()
    width = 0.8 / max(1, len(series))
    figure, axes = plt.subplots(figsize=(max(5.0, 0.7 * len(groups) * max(1, len(series)) + 2), 4.2))
    x = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        heights = [np.nan if v is None else v for v in values]
        bars = axes.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, label=name)
        axes.bar_label(bars, labels=["" if v is None else f"{v:.2f}" for v in values], fontsize=7)
    if reference is not None:
        axes.axhline(reference[1], color="black", linestyle="--", linewidth=1, label=reference[0])
    axes.set_xticks(x)
    axes.set_xticklabels(groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
    axes.set_ylim(0, limit)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if len(series) > 1 or reference is not None:
        axes.legend(fontsize="small")
    figure.tight_layout()
    return figure


def _acc_of(e):
    return None if not e else e["accuracy"]


def figures(report):
    """`{set name: matplotlib figure}`, one chart per set of the report."""
    out, sets = {}, report["sets"]
    if "breaking_nli" in sets:
        s = sets["breaking_nli"]
        out["breaking_nli"] = _bars("Breaking NLI: accuracy per category", list(s["per_category"]),
                                    {"accuracy": [v["accuracy"] for v in s["per_category"].values()]},
                                    reference=("overall", s["accuracy"]))
    if "hans" in sets:
        s = sets["hans"]
        out["hans"] = _bars("HANS: accuracy per heuristic", list(s["per_heuristic"]),
                            {gold: [_acc_of(v[gold]) for v in s["per_heuristic"].values()]
                             for gold in ("entailment", "non-entailment")})
    if "snli_hard" in sets:
        s = sets["snli_hard"]
        groups = ["hard"] + (["full test"] if s["full_test_accuracy"] is not None else [])
        out["snli_hard"] = _bars("SNLI: hard subset vs full test set", groups,
                                 {"accuracy": [s["accuracy"], s["full_test_accuracy"]][:len(groups)]})
    if "stress_tests" in sets:
        s = sets["stress_tests"]
        out["stress_tests"] = _bars("Stress tests: accuracy", list(s["tests"]),
                                    {part: [_acc_of(v[part]) for v in s["tests"].values()]
                                     for part in ("matched", "mismatched", "all")})
    if "anli" in sets:
        s = sets["anli"]
        out["anli"] = _bars(f"ANLI ({s['split']}): accuracy per round", list(s["rounds"]),
                            {"accuracy": [v["accuracy"] for v in s["rounds"].values()]},
                            reference=("chance", 1 / 3))
    if "behaviour" in sets:
        s = sets["behaviour"]
        out["behaviour"] = _bars("Behaviour tests: failure rate", list(s["tests"]),
                                 {"failure rate": [v["failure_rate"] for v in s["tests"].values()]},
                                 ylabel="failure rate")
    if "artifacts" in sets:
        s = sets["artifacts"]
        names = list(s["baselines"])
        out["artifacts"] = _bars("Artifacts: baselines and the model on their errors", ["model"] + names,
                                 {"accuracy": [s["model"]["accuracy"]] + [s["baselines"][n]["accuracy"] for n in names],
                                  "model on the baseline's errors": [None] + [s["baselines"][n]["hard"]["accuracy"]
                                                                              for n in names]})
    return out


def write_charts(report, out_dir):
    """Saves one PNG per set, `OUT_DIR/diagnostics_SET.png`; returns `{set: path}`."""
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, figure in figures(report).items():
        path = os.path.join(out_dir, f"diagnostics_{name}.png")
        with atomic_path(path) as tmp:
            figure.savefig(tmp, dpi=100, format="png")
        plt.close(figure)
        paths[name] = path
    return paths
