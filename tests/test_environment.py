"""Environment switches are read once and strictly (docs/conventions.md#environment): a value the toolkit cannot
read fails before any work with exit 2, a message naming the variable and no traceback, and leaves nothing behind;
the fused kernel's cache repairs a damaged entry and sweeps what killed builds left."""

import os
import subprocess
import sys
import time

import pytest

from inductionlab import environ, native
from inductionlab.cli import main
from inductionlab.models import fused

BAD = [
    ("INDUCTIONLAB_FUSED", "maybe", "INDUCTIONLAB_FUSED: a switch"),
    ("INDUCTIONLAB_FUSED", "2", "INDUCTIONLAB_FUSED: a switch"),
    ("CC", "no-such-compiler-here", "CC: 'no-such-compiler-here' is no program"),
    ("CC", "gcc '-O2", "CC: not a command"),
    ("OMP_NUM_THREADS", "²", "OMP_NUM_THREADS: an integer from 1 to 1024"),
    ("OMP_NUM_THREADS", "١٠", "OMP_NUM_THREADS: an integer from 1 to 1024"),
    ("OMP_NUM_THREADS", "1_0", "OMP_NUM_THREADS: an integer from 1 to 1024"),
    ("OMP_NUM_THREADS", "0", "OMP_NUM_THREADS: an integer from 1 to 1024"),
    ("SLURM_CPUS_PER_TASK", "4096", "SLURM_CPUS_PER_TASK: an integer from 1 to 1024"),
]


@pytest.mark.parametrize("var,value,match", BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_a_bad_switch_fails_before_any_work_naming_itself(var, value, match, monkeypatch, tmp_path, capsys):
    for other in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(var, value)
    out = tmp_path / "run"
    assert main(["run", "approx-ihn", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err
    assert not out.exists()  # nothing was started, so nothing is left


def test_switches_take_every_spelling_of_on_and_off_and_threads_has_a_ceiling(monkeypatch, capsys, tmp_path):
    for value, want in (("0", False), ("false", False), ("OFF", False), ("no", False), ("1", True), ("Yes", True)):
        monkeypatch.setenv("INDUCTIONLAB_FUSED", value)
        assert environ.flag("INDUCTIONLAB_FUSED", True) is want
    monkeypatch.setenv("INDUCTIONLAB_FUSED", "false")
    fused.library.cache_clear()
    try:
        assert fused.library() is None  # off: no build, no kernel
    finally:
        fused.library.cache_clear()
    monkeypatch.setenv("CC", "gcc -O2")  # a command with its arguments
    if environ.shutil.which("gcc"):
        assert environ.compiler() == ["gcc", "-O2"]
    out = tmp_path / "run"
    assert main(["run", "approx-ihn", "--preset", "smoke", "--out", str(out), "--threads", "100000"]) == 2
    assert "--threads: an integer from 1 to 1024" in capsys.readouterr().err and not out.exists()


def _kernel_in_a_new_process(env: dict) -> str:
    """Build or load the kernel in a fresh process (a library this process mapped must not be truncated under it)."""
    code = "from inductionlab.models import fused; k = fused.library(); print(None if k is None else k.lanes)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] + "|" + done.stderr


@pytest.mark.skipif(not environ.shutil.which("gcc") and not environ.shutil.which("cc"), reason="no C compiler")
def test_a_damaged_cache_entry_is_rebuilt_once_and_killed_builds_temporaries_are_swept(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("INDUCTIONLAB_FUSED", "CC")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    cache = tmp_path / "inductionlab" / "fused"
    assert _kernel_in_a_new_process(env).split("|")[0] in ("8", "16")
    (entry,) = cache.glob("fused-*.so")
    with open(entry, "r+b") as f:  # as `truncate -s 100` leaves it
        f.truncate(100)
    stale, fresh = cache / "tmpdead.so", cache / "tmplive.so"
    stale.write_bytes(b"half"), fresh.write_bytes(b"half")
    old = time.time() - 2 * native.STALE
    os.utime(stale, (old, old))
    lanes, log = _kernel_in_a_new_process(env).split("|", 1)
    assert lanes in ("8", "16") and "unavailable" not in log  # removed, built again, loaded
    assert entry.stat().st_size > 100
    assert not stale.exists() and fresh.exists()  # a build that may still be running keeps its file


@pytest.mark.skipif(not environ.shutil.which("gcc") and not environ.shutil.which("cc"), reason="no C compiler")
def test_processes_building_the_kernel_at_once_all_load_it_and_leave_one_entry(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("INDUCTIONLAB_FUSED", "CC")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = "from inductionlab.models import fused; k = fused.library(); print(None if k is None else k.lanes)"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=900) for p in procs]  # each builds into its own temporary, then renames
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    assert all(o.strip().splitlines()[-1] in ("8", "16") and "unavailable" not in e for o, e in outs), outs
    cache = tmp_path / "inductionlab" / "fused"
    assert len(list(cache.glob("fused-*.so"))) == 1 and not list(cache.glob("tmp*.so"))
