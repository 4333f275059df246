"""The figures of README.md and docs/ are the figures of their records: every results block of the pages
is exactly what `results/` renders (a number changed in a record makes this fail), and the rendering
itself, checked on a tiny synthetic results folder."""

import copy
import json
import os
import subprocess
import sys

import pytest

from zoo.measurements.record import RecordError, append_record, load_results, make_record, read_records
from zoo.measurements.render import BLOCK, TABLES, RenderError, render, render_blocks, stale_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(
    os.path.join(ROOT, "docs", name) for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md"))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def results():
    return load_results(os.path.join(ROOT, "results"))


def test_every_results_block_of_the_pages_is_what_the_records_render(results):
    shown = set()
    for path in PAGES:
        text = read(path)
        shown |= {match.group(2) for match in BLOCK.finditer(text)}
        assert stale_tables(text, results, path) == [], f"{path}: run python scripts/render_results.py"
    assert shown == set(TABLES)  # every table is on some page


def test_a_number_changed_in_a_record_makes_its_table_stale(results):
    changed = copy.deepcopy(results)
    [record] = changed["serving"]["amd-epyc-25-17"]
    record["figures"]["esim/saved_model/1/p50_ms"]["median"] += 0.01
    text = read(os.path.join(ROOT, "README.md"))
    assert "serving" in stale_tables(text, changed) and stale_tables(text, results) == []


def machine_info(model="17", cores=2, peak=None):
    return {"cpu": {"model_name": "AMD EPYC", "vendor": "AuthenticAMD", "family": "25", "model": model,
                    "stepping": "1", "flags": ["avx2", "fma"], "l2_per_core_kib": 512.0, "cores": cores,
                    "hypervisor": ""}, "peak_gflops": peak or {}}


def test_records_append_one_line_a_run_and_render_a_row_per_cpu(tmp_path):
    folder = str(tmp_path / "results")
    serving = {"esim/saved_model/1/p50_ms": [5.0, 4.0, 6.0], "esim/torch/1/p50_ms": [10.0, 9.0, 11.0],
               "esim/saved_model/inter:2/b32_pairs_per_s": [600.0], "esim/torch/2/b32_pairs_per_s": [400.0]}
    path = append_record(make_record("serving", serving, machine_info(), command="python x.py"), folder)
    assert path == os.path.join(folder, "serving", "amd-epyc-25-17.jsonl")
    append_record(make_record("serving", {"esim/saved_model/1/p50_ms": [4.0]}, machine_info()), folder)
    append_record(make_record("serving", {"esim/saved_model/1/p50_ms": [8.0], "esim/torch/1/p50_ms": [4.0]},
                              machine_info(model="1")), folder)
    first, second = read_records(path)
    assert first["figures"]["esim/saved_model/1/p50_ms"] == {"median": 5.0, "min": 4.0, "max": 6.0, "rounds": 3}
    assert first["command"] == "python x.py" and first["versions"]["python"] and first["date"]
    table = render("serving", load_results(folder)).splitlines()
    assert len(table) == 4                                          # header, rule, one row per CPU
    epyc_1, epyc_17 = table[2], table[3]
    # the machine's latest figure (4.0, second line) beside the reference's from the first line: 10 / 4 = 2.5x
    assert epyc_17.startswith("| AMD EPYC 25/17 | 4.00 / 10.00 ms, **2.50x** |")
    assert "| 600 / 400, **1.50x** |" in epyc_17                    # both cores: the zoo's layout, inter:2
    assert epyc_1.startswith("| AMD EPYC 25/1 | 8.00 / 4.00 ms, **0.50x** |")


def test_the_other_tables_from_a_tiny_folder(tmp_path):
    folder = str(tmp_path / "results")
    append_record(make_record("suite", {"wall_s": [771.0], "cpu_s": [1473.0], "tests": [1326]}, machine_info(),
                              date="2026-01-02"), folder)
    append_record(make_record("machine", {"gemm_peak/1": [100.0, 110.0], "gemm_peak/2": [200.0]},
                              machine_info(peak={"1": 110.0, "2": 200.0})), folder)
    append_record(make_record("loop-crossover", {"inter:1/1/packed_over_kernel": [0.9], "inter:1/1/kernel_ms": [10.0],
                                                 "inter:1/1/packed_ms": [9.0]}, machine_info()), folder)
    training = {"esim/1/64/steps_pairs_per_s": [120.0], "esim/1/64/epoch_pairs_per_s": [100.0],
                "torch/1/64/pairs_per_s": [80.0]}
    append_record(make_record("training", training, machine_info()), folder)
    results = load_results(folder)
    assert render("suite", results).splitlines()[2] == "| AMD EPYC 25/17 | 1,326 | 12 min 51 s | 1,473 s | 2026-01-02 |"
    assert render("machines", results).splitlines()[2] == \
        "| AMD EPYC 25/17 | `amd-epyc-25-17` | 25 / 17 | avx2, fma | 512 KiB | 2 | 105 (100-110) | 200 |"
    assert render("loop-crossover", results).splitlines()[2] == \
        "| AMD EPYC 25/17 | one thread | 0.90x (9.00 / 10.00 ms) |"
    assert render("training", results).splitlines()[2] == \
        "| AMD EPYC 25/17 | 64 | 120.0 / 100.0 / 80.0 | **1.50x / 1.25x** |  |  |"


def test_learning_check_rows_gather_the_seeds_and_a_rerun_of_a_seed_replaces_it(tmp_path):
    folder = str(tmp_path / "results")
    conditions = "3000 training pairs, 4 epochs, hidden size preset"
    for seed, accuracy, learns in ((0, 0.49, 0.0), (1, 0.60, 1.0), (0, 0.51, 1.0)):  # the last reruns seed 0
        figures = {"seed": [seed], "m/held_out_accuracy": [accuracy], "m/learns": [learns],
                   "m/train_loss/1": [1.07], "m/train_loss/2": [1.04]}
        append_record(make_record("learning_check", figures, machine_info(), notes=conditions), folder)
    append_record(make_record("learning_check", {"seed": [0], "m/held_out_accuracy": [0.4], "m/learns": [0.0]},
                              machine_info(), notes="other conditions"), folder)
    lines = render("learning-check", load_results(folder)).splitlines()
    assert lines[2] == (f"| `m` | AMD EPYC 25/17 | {conditions} | 0, 1 | 1.070, 1.040; 1.070, 1.040 | "
                        "0.510, 0.600 (mean 0.555) | yes |")
    assert lines[3] == "| `m` | AMD EPYC 25/17 | other conditions | 0 |  | 0.400 | no |"


def test_esim_level_gives_each_side_its_mean_and_the_run_level_interval(tmp_path):
    folder = str(tmp_path / "results")
    figures = {"zoo/test_accuracy": [0.50, 0.52, 0.57], "zoo/test_accuracy_mean": [0.53],
               "reference/test_accuracy": [0.48, 0.50, 0.52], "reference/test_accuracy_mean": [0.50],
               "difference/runs_interval_low": [-0.01], "difference/runs_interval_high": [0.07],
               "difference/runs_p_value": [0.12]}
    append_record(make_record("esim_level", figures, machine_info(), notes="7200 pairs"), folder)
    assert render("esim-level", load_results(folder)).splitlines()[2] == \
        "| AMD EPYC 25/17 | 7200 pairs | 53.00 (3 seeds, 50.00-57.00) | 50.00 (3 seeds, 48.00-52.00) | " \
        "[-1.00, +7.00] | 0.12 |"


def test_a_page_block_is_refilled_and_an_unknown_table_named_with_its_line():
    text = "# Page\n\n<!-- results: suite -->\nold\n<!-- /results -->\n"
    new, ids = render_blocks(text, {})
    assert ids == ["suite"] and "old" not in new and new.endswith("|---|---:|---:|---:|---|\n<!-- /results -->\n")
    with pytest.raises(RenderError, match=r"page.md, line 3: no table 'speed'"):
        render_blocks("# Page\n\n<!-- results: speed -->\n<!-- /results -->\n", {}, "page.md")


def test_a_line_that_is_not_a_record_is_named_with_its_file_and_line(tmp_path):
    path = tmp_path / "serving" / "x.jsonl"
    path.parent.mkdir()
    good = make_record("serving", {"a": [1.0]}, machine_info())
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "figures": {"a": 3}}) + "\n")
    with pytest.raises(RecordError, match=r"x.jsonl, line 2: figure 'a' is not"):
        read_records(path)
    path.write_text("{not json\n")
    with pytest.raises(RecordError, match=r"x.jsonl, line 1: not JSON"):
        read_records(path)


def test_render_results_check_exits_1_naming_the_stale_table(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n\n<!-- results: suite -->\n| stale |\n<!-- /results -->\n")
    append_record(make_record("suite", {"wall_s": [60.0]}, machine_info()), str(tmp_path / "results"))
    command = [sys.executable, os.path.join(ROOT, "scripts", "render_results.py"), "--root", str(tmp_path)]
    check = subprocess.run(command + ["--check"], capture_output=True, text=True)
    assert check.returncode == 1 and "stale table README.md: suite" in check.stderr
    assert subprocess.run(command, capture_output=True, text=True).returncode == 0
    assert subprocess.run(command + ["--check"], capture_output=True, text=True).returncode == 0
    assert "| AMD EPYC 25/17 |  | 1 min 00 s |" in (tmp_path / "README.md").read_text()
    (tmp_path / "results" / "suite" / "amd-epyc-25-17.jsonl").write_text("[]\n")
    bad = subprocess.run(command + ["--check"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "amd-epyc-25-17.jsonl, line 1" in bad.stderr
