"""scripts/benchmark_serving.py's thread settings: what `--threads` asks for is what each measuring process
sets (TensorFlow's two pools, or one pool for LiteRT and PyTorch), and the GEMM peak it is compared with."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

from benchmark_serving import thread_setting  # noqa: E402  (a script, not a package)


@pytest.mark.parametrize("text, expected", [
    ("1", {"label": "1", "threads": 1, "intra": 1}),
    ("all", {"label": "16", "threads": 16, "intra": 16}),
    ("4", {"label": "4", "threads": 4, "intra": 4}),
    ("inter:all", {"label": "inter:16", "threads": 16, "intra": 1}),   # TF Serving's intra 1, inter 16
    ("inter:2", {"label": "inter:2", "threads": 2, "intra": 1}),
])
def test_thread_settings_name_both_of_tensorflows_pools(text, expected):
    assert thread_setting(text, cores=16) == expected


def test_a_bad_thread_setting_is_refused():
    with pytest.raises(ValueError):
        thread_setting("inter:some", cores=2)
