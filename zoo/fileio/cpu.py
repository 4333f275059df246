"""This machine's CPU as the system describes it (`lscpu`, else /proc/cpuinfo; the L2 cache from sysfs), the
machine id derived from it, `machine_id(cpu())` (`amd-epyc-25-17`), and the software at hand (`software()`).

Standard library only, on the lowest floor, so that every layer can name the machine it runs on: the record
files of `zoo.measurements` (`results/<benchmark>/<machine id>.jsonl`) and the tuning record of
`zoo.export.loop_tuning` (`nli-zoo tune`) are keyed by the same id.
"""

import os
import platform
import re
import subprocess

FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8")
CPUINFO_KEYS = {"model name": "Model name", "vendor_id": "Vendor ID", "cpu family": "CPU family", "model": "Model",
                "stepping": "Stepping", "flags": "Flags"}
VENDORS = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}
SIZE_UNITS = {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024}


def _cpu_fields():
    """`lscpu`'s fields (`Model name`, `Vendor ID`, ...), or /proc/cpuinfo's under the same names."""
    fields = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):  # no lscpu (macOS, a bare container): /proc/cpuinfo
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    fields.setdefault(CPUINFO_KEYS.get(key.strip(), key.strip()), value.strip())
        except OSError:
            pass
    return fields


def size_kib(text):
    """`512K`, `2 MiB`, `524288` (bytes) as KiB; None when unreadable."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMG]?)(?:i?B)?\s*", text or "")
    return None if not match else float(match.group(1)) * SIZE_UNITS[match.group(2)]


def l2_per_core_kib():
    """The L2 cache of one core in KiB: sysfs (cpu0's level-2 cache), else `lscpu -C`'s ONE-SIZE; None."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(base)):
            with open(os.path.join(base, index, "level"), encoding="utf-8") as f:
                if f.read().strip() != "2":
                    continue
            with open(os.path.join(base, index, "size"), encoding="utf-8") as f:
                return size_kib(f.read())
    except OSError:
        pass
    try:
        out = subprocess.run(["lscpu", "-C"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines()[1:]:
        cells = line.split()
        if cells and cells[0] == "L2" and len(cells) > 1:
            return size_kib(cells[1])
    return None


def cpu():
    """This CPU: model name, vendor, family, model, stepping, the matrix-kernel flags, L2 a core (KiB), the
    cores this process may use, the hypervisor (empty on bare metal)."""
    fields = _cpu_fields()
    flags = set(fields.get("Flags", "").split())
    return {"model_name": fields.get("Model name") or platform.processor() or platform.machine(),
            "vendor": fields.get("Vendor ID", ""), "family": fields.get("CPU family", ""),
            "model": fields.get("Model", ""), "stepping": fields.get("Stepping", ""),
            "flags": [flag for flag in FLAGS if flag in flags], "l2_per_core_kib": l2_per_core_kib(),
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "hypervisor": fields.get("Hypervisor vendor", "")}


def machine_id(facts):
    """The machine's name in `results/`: vendor, product line, family and model, e.g. `amd-epyc-25-17`
    (`intel-xeon-6-207`); the same for every VM of that CPU kind, whatever its stepping or clock."""
    vendor = VENDORS.get(facts.get("vendor", ""), re.sub(r"[^a-z0-9]+", "", facts.get("vendor", "").lower()))
    words = [re.sub(r"\(.*?\)", "", w).lower() for w in facts.get("model_name", "").split()]
    words = [w for w in words if w and w not in (vendor, "amd", "intel", "cpu")]
    line = re.sub(r"[^a-z0-9]+", "", words[0]) if words else ""
    parts = [vendor or "cpu", line, str(facts.get("family", "")), str(facts.get("model", ""))]
    return "-".join(p for p in parts if p) or "unknown"


def software(packages=("tensorflow", "keras")):
    """Python's version, the platform and each installed package of `packages` with its version."""
    import importlib.metadata as metadata

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # not installed (a JAX-only machine): nothing to name
            pass
    return out
