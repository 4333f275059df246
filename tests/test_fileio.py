"""zoo.fileio: atomic writes that survive kill -9, one writer per folder, versions allocated by racing
processes, corrupt JSON reported in one line, stale temporaries cleaned.

The concurrency tests start real processes (the Python of this session importing only zoo.fileio, a
fraction of a second each).
"""

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from zoo.fileio import (
    FAULT_VARIABLE,
    CorruptFileError,
    DirectoryLock,
    LockedError,
    VersionExistsError,
    allocate_version,
    atomic_path,
    atomic_write,
    clean_stale_temporaries,
    fault_point,
    latest_version,
    publish_folder,
    read_json,
    recover_folder,
    remove_empty_versions,
    sibling_lock_file,
    staging_folder,
    version_numbers,
    write_json,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(code, *args):
    """A Python process running `code` (with zoo importable), stdout piped."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def dead_pid():
    """The PID of a process that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def temporaries(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp-" in n)


# ---------------------------------------------------------------- atomic writes

def test_kill_9_during_a_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "results.json"
    write_json(target, {"epoch": 4, "dev": 0.4531})
    writer = start("""
import sys, time
from zoo.fileio import atomic_write
with atomic_write(sys.argv[1]) as f:
    f.write(b'{"epoch": 5, "dev"')   # half a file...
    f.flush()
    print("writing", flush=True)
    time.sleep(60)                   # ... when the process is killed
""", target)
    assert writer.stdout.readline().strip() == "writing"
    assert temporaries(tmp_path)  # the new data lives under a temporary name
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert read_json(target) == {"epoch": 4, "dev": 0.4531}
    # The next run removes the leftover of the dead process, and only that.
    with atomic_write(tmp_path / "other.txt") as f:
        f.write(b"x")
        removed = []
        assert clean_stale_temporaries(tmp_path, on_remove=removed.append) == 1  # not our own, in progress
        assert [os.path.basename(p) for p in removed] == [f".results.json.tmp-{writer.pid}-" +
                                                          os.path.basename(removed[0]).rsplit("-", 1)[1]]
    assert temporaries(tmp_path) == [] and (tmp_path / "other.txt").read_bytes() == b"x"


def test_atomic_write_failure_and_permissions(tmp_path):
    target = tmp_path / "vocab.txt"
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(target, "w") as f:
            f.write("half")
            raise RuntimeError("boom")
    assert not target.exists() and temporaries(tmp_path) == []
    umask = os.umask(0o022)
    try:
        with atomic_write(target, "w") as f:
            f.write("a\nb\n")
    finally:
        os.umask(umask)
    assert target.read_text() == "a\nb\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # the umask's, not tempfile's 0600
    target.chmod(0o640)
    with atomic_write(target) as f:
        f.write(b"c\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # a replaced file keeps its permissions
    with pytest.raises(ValueError, match="mode"):
        with atomic_write(target, "a"):
            pass


def test_atomic_path_keeps_the_suffix(tmp_path):
    target = tmp_path / "best.weights.h5"
    target.write_bytes(b"old weights")
    with atomic_path(target) as tmp:
        name = os.path.basename(tmp)
        assert name.startswith(f".best.tmp-{os.getpid()}-") and name.endswith(".weights.h5")
        assert os.path.dirname(tmp) == str(tmp_path)
        with open(tmp, "wb") as f:
            f.write(b"new weights")
    assert target.read_bytes() == b"new weights" and temporaries(tmp_path) == []
    with pytest.raises(OSError, match="disk full"):
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"partial")
            raise OSError("disk full")
    assert target.read_bytes() == b"new weights" and temporaries(tmp_path) == []
    # A folder replaces the empty version folder that allocate_version reserved.
    version = allocate_version(tmp_path / "model")
    with atomic_path(tmp_path / "model" / str(version)) as tmp:
        os.makedirs(os.path.join(tmp, "variables"))
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"graph")
    assert sorted(os.listdir(tmp_path / "model" / "1")) == ["saved_model.pb", "variables"]
    assert temporaries(tmp_path / "model") == []


# ---------------------------------------------------------------- JSON

def test_corrupt_json_is_one_line_naming_the_file_and_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model": "esim",\n "lr": 0.0004\n "epochs": 3}\n')
    with pytest.raises(CorruptFileError) as error:
        read_json(path)
    message = str(error.value)
    assert "\n" not in message and isinstance(error.value, ValueError)
    assert message.startswith(f"{path}: not valid JSON (line 3: Expecting ','") and "delete it" in message
    path.write_bytes(b"")  # what a kill during a plain open(..., "w") leaves
    with pytest.raises(CorruptFileError, match=r"config\.json: not valid JSON \(empty file\): restore it"):
        read_json(path, remedy="restore it")
    assert read_json(tmp_path / "missing.json", default={"a": 1}) == {"a": 1}
    write_json(path, {"b": [1, 2]})
    assert read_json(path) == {"b": [1, 2]} and path.read_text().endswith("\n")


# ---------------------------------------------------------------- locks

HOLD = """
import sys, time
from zoo.fileio import DirectoryLock, LockedError
directory, at, hold = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
time.sleep(max(0.0, at - time.time()))
try:
    lock = DirectoryLock(directory).acquire()
except LockedError as e:
    print("refused", e, flush=True)
else:
    print("won", flush=True)
    time.sleep(hold)
    lock.release()
"""


@pytest.mark.large
def test_two_processes_racing_for_a_lock_one_wins(tmp_path):
    for attempt in range(2):  # two rounds: a fresh folder, then one whose lock was released
        at = time.time() + 0.8  # both are running (interpreter started) before this moment
        racers = [start(HOLD, tmp_path, at, 1.5) for _ in range(2)]
        outputs = [r.communicate(timeout=30)[0].strip() for r in racers]
        assert sorted(o.split(" ", 1)[0] for o in outputs) == ["refused", "won"], outputs
        winner = racers[[o.startswith("won") for o in outputs].index(True)]
        refusal = next(o for o in outputs if o.startswith("refused"))
        assert "\n" not in refusal and f"PID {winner.pid} on {socket.gethostname()}" in refusal
        assert f"delete {tmp_path / '.lock'}" in refusal
        assert not (tmp_path / ".lock").exists()  # released


def test_a_live_holder_refuses_and_a_dead_one_is_taken_over(tmp_path, capsys):
    holder = start(HOLD, tmp_path, 0, 60)
    assert holder.stdout.readline().strip() == "won"
    with pytest.raises(LockedError) as error:
        DirectoryLock(tmp_path, what="export folder").acquire()
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"the export folder {tmp_path} is in use by PID {holder.pid}")
    assert error.value.holder["pid"] == holder.pid and "since" in message
    holder.send_signal(signal.SIGKILL)  # its lock file stays; the kernel drops its flock
    holder.wait()
    assert (tmp_path / ".lock").exists()
    with DirectoryLock(tmp_path) as lock:
        assert lock.held and json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    assert f"took over the lock of the run directory {tmp_path}: its holder PID {holder.pid}" in capsys.readouterr().err
    assert not (tmp_path / ".lock").exists()


def test_stale_lock_file_of_a_dead_pid_and_one_from_another_host(tmp_path, capsys):
    pid = dead_pid()
    lock_file = tmp_path / ".lock"
    lock_file.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": "2024-01-01T00:00:00",
                                     "command": "python train.py"}))
    lock = DirectoryLock(tmp_path).acquire()
    assert f"its holder PID {pid} on {socket.gethostname()} since 2024-01-01T00:00:00" in capsys.readouterr().err
    with pytest.raises(LockedError, match=f"in use by PID {os.getpid()}"):  # one writer, even in one process
        DirectoryLock(tmp_path).acquire()
    lock.release()
    lock.release()  # twice is fine
    lock_file.write_text(json.dumps({"pid": pid, "host": "elsewhere.example", "started": "2024-01-01T00:00:00"}))
    with pytest.raises(LockedError, match=r"PID \d+ on elsewhere\.example .*cannot be checked from .*delete "):
        DirectoryLock(tmp_path).acquire()
    assert lock_file.exists()  # never taken from another host
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file: the run directory must be a folder"):
        DirectoryLock(tmp_path / "file").acquire()


# ---------------------------------------------------------------- versions

def test_versions_allocated_by_racing_processes_are_distinct(tmp_path):
    code = """
import sys, time
from zoo.fileio import allocate_version
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
print(" ".join(str(allocate_version(sys.argv[1])) for _ in range(25)), flush=True)
"""
    at = time.time() + 0.8
    racers = [start(code, tmp_path / "model", at) for _ in range(3)]
    versions = [int(v) for r in racers for v in r.communicate(timeout=30)[0].split()]
    assert sorted(versions) == list(range(1, 76))
    assert sorted(int(n) for n in os.listdir(tmp_path / "model")) == list(range(1, 76))
    assert stat.S_IMODE((tmp_path / "model" / "1").stat().st_mode) & 0o055  # not 0700


def test_one_allocator_lists_picks_and_reserves_versions(tmp_path):
    model = tmp_path / "model"
    assert version_numbers(model) == [] and latest_version(model) is None
    for version in (1, 2, 10):
        (model / str(version)).mkdir(parents=True)
    (model / "1" / "saved_model.pb").write_bytes(b"")
    (model / "10" / "saved_model.pb").write_bytes(b"")
    (model / "notes").mkdir()
    (model / "3").write_text("a file, not a version")
    assert version_numbers(model) == [1, 2, 10] and latest_version(model) == 10
    assert version_numbers(model, holding="saved_model.pb") == [1, 10]
    assert allocate_version(model) == 11
    with pytest.raises(VersionExistsError, match=r"/model/2 already exists; choose another --version"):
        allocate_version(model, 2)
    with pytest.raises(ValueError, match="positive"):
        allocate_version(model, 0)
    assert allocate_version(model, 5) == 5
    assert remove_empty_versions(model) == [str(model / n) for n in ("11", "2", "5")]  # sorted by name
    assert version_numbers(model) == [1, 10]


def test_a_lock_beside_a_folder_does_not_create_it(tmp_path):
    folder = tmp_path / "models" / "esim_tflite"
    lock = DirectoryLock(folder, what="TFLite export folder", lock_file=sibling_lock_file(folder)).acquire()
    assert not folder.exists() and (tmp_path / "models" / ".esim_tflite.lock").exists()
    with pytest.raises(LockedError, match=f"the TFLite export folder {folder} is in use by PID {os.getpid()}"):
        DirectoryLock(folder, what="TFLite export folder", lock_file=sibling_lock_file(folder)).acquire()
    lock.release()
    assert os.listdir(tmp_path / "models") == []


PUBLISH = """
import os, sys
from zoo.fileio import folders, publish_folder, staging_folder
target = sys.argv[1]
if sys.argv[2:] == ["no-exchange"]:  # a system without renameat2's exchange: renamed aside, then in
    folders.exchange = lambda a, b: False
staged = staging_folder(target)
with open(os.path.join(staged, "model"), "w") as f:
    f.write("new")
publish_folder(staged, target, overwrite=True, fault_step="test")
"""


# killed with the two folders exchanged (the old one left at the staging name), or, without an exchange, with the
# old folder set aside and the new one staged (both repaired), or with the new one in place
@pytest.mark.parametrize("step, left, repairs", [("test:exchanged", "new", 1), ("test:old-moved-aside", "old", 2),
                                                 ("test:new-moved-in", "new", 1)])
def test_a_kill_between_the_renames_of_a_folder_leaves_the_old_or_the_new_one(tmp_path, step, left, repairs):
    target = tmp_path / "export"
    target.mkdir()
    (target / "model").write_text("old")
    env = dict(os.environ, PYTHONPATH=ROOT, **{FAULT_VARIABLE: step})
    how = [] if step == "test:exchanged" else ["no-exchange"]
    process = subprocess.run([sys.executable, "-c", PUBLISH, str(target), *how], env=env, cwd=ROOT, timeout=60)
    assert process.returncode == -signal.SIGKILL
    notices = []
    assert recover_folder(target, on_notice=notices.append) == repairs
    assert (target / "model").read_text() == left
    assert sorted(os.listdir(tmp_path)) == ["export"] and len(notices) == repairs
    assert ("put back" if left == "old" else "removed") in notices[0]
    subprocess.run([sys.executable, "-c", PUBLISH, str(target), *how], env=dict(env, **{FAULT_VARIABLE: ""}),
                   cwd=ROOT, timeout=60, check=True)
    assert (target / "model").read_text() == "new" and sorted(os.listdir(tmp_path)) == ["export"]


def test_publish_folder_refuses_an_occupied_target_without_overwrite(tmp_path):
    (tmp_path / "export").mkdir()
    staged = staging_folder(tmp_path / "export")
    (tmp_path / "export" / "model").write_text("old")
    with pytest.raises(FileExistsError, match="already exists"):
        publish_folder(staged, tmp_path / "export")
    (tmp_path / "empty").mkdir()  # an empty folder is simply replaced
    assert publish_folder(staged, tmp_path / "empty") == str(tmp_path / "empty")
    fault_point("test:never-named")  # without NLI_ZOO_FAULT_AT naming it, a no-op


def test_clean_stale_temporaries_keeps_live_ones(tmp_path):
    pid = dead_pid()
    (tmp_path / f".best.tmp-{pid}-abc123.weights.h5").write_bytes(b"x")
    (tmp_path / f"glove.tmp-{pid}").mkdir()  # a conversion folder of the vector cache
    (tmp_path / f".vocab.txt.tmp-{os.getpid()}-abc123").write_bytes(b"mine")
    (tmp_path / "notes.tmp-file").write_bytes(b"not ours")
    (tmp_path / "best.weights.h5").write_bytes(b"kept")
    assert clean_stale_temporaries(tmp_path, prefix="glove.tmp-") == 1  # only this name's
    assert (tmp_path / f".best.tmp-{pid}-abc123.weights.h5").exists()
    (tmp_path / f"glove.tmp-{pid}").mkdir()
    assert clean_stale_temporaries(tmp_path) == 2
    assert sorted(os.listdir(tmp_path)) == [f".vocab.txt.tmp-{os.getpid()}-abc123", "best.weights.h5", "notes.tmp-file"]
    assert clean_stale_temporaries(tmp_path / "missing") == 0
