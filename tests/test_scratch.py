"""The per-process scratch folder: one folder, removed on exit, swept after SIGKILL, never
swept while its owner or a worker that joined it lives. Real processes, real locks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from couplescope.protocol import scratch

HOLD = textwrap.dedent('''
    import os, sys, time
    from couplescope.protocol import scratch
    path = scratch.join(sys.argv[1]) if len(sys.argv) > 1 else scratch.folder()
    open(os.path.join(path, "model.pt"), "w").write("x" * 1000)
    print(path, flush=True)
    time.sleep(60)
''')


def hold(tmp_path, *args):
    """A process holding a scratch folder (or a worker's place in one); its path."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, *map(str, args)], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, TMPDIR=str(tmp_path)))
    return proc, proc.stdout.readline().strip()


def ours(tmp_path):
    return sorted(n for n in os.listdir(tmp_path) if "couplescope" in n)


def test_a_folder_is_swept_only_once_its_owner_is_dead(tmp_path):
    owner, path = hold(tmp_path)
    try:
        assert os.path.basename(path).startswith(f"couplescope-{owner.pid}-")
        assert scratch.sweep(str(tmp_path)) == [] and os.path.isdir(path)   # alive: kept
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert os.path.isdir(path)                                          # SIGKILL leaves it ...
        assert scratch.sweep(str(tmp_path)) == [path] and ours(tmp_path) == []   # ... the next run sweeps it
    finally:
        owner.kill()
        owner.wait()


def test_a_worker_that_joined_keeps_the_folder_while_it_runs(tmp_path):
    owner, path = hold(tmp_path)
    worker, own = hold(tmp_path, path)
    try:
        assert os.path.dirname(own) == path and os.path.basename(own).startswith(f"worker-{worker.pid}-")
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert scratch.sweep(str(tmp_path)) == [] and os.path.isdir(own)   # the worker still holds it
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert scratch.sweep(str(tmp_path)) == [path] and ours(tmp_path) == []
    finally:
        for p in (owner, worker):
            p.kill()
            p.wait()


def test_a_normal_exit_removes_the_folder_and_a_worker_only_its_own_part(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    code = ("import os, sys\nfrom couplescope.protocol import scratch\n"
            "p = scratch.join(sys.argv[1]) if len(sys.argv) > 1 else scratch.folder()\n"
            "open(os.path.join(p, 'f'), 'w').close()\nprint(p)")
    owner, path = hold(tmp_path)
    try:
        worker = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env)
        assert worker.returncode == 0 and not os.path.exists(worker.stdout.strip())
        assert os.listdir(path) and os.path.isdir(path)          # the owner's part stays
    finally:
        owner.kill()
        owner.wait()
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert alone.returncode == 0 and not os.path.exists(alone.stdout.strip())


def test_folders_without_a_lock_and_other_names_are_left_alone(tmp_path):
    (tmp_path / "couplescope-tui-old").mkdir()      # an older couplescope's: cannot tell if in use
    (tmp_path / "something-else").mkdir()
    stale = tmp_path / ".couplescope-new-abc"       # died while creating one, long ago
    stale.mkdir()
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    fresh = tmp_path / ".couplescope-new-def"        # being created right now
    fresh.mkdir()
    assert scratch.sweep(str(tmp_path)) == [str(stale)]
    assert sorted(os.listdir(tmp_path)) == [".couplescope-new-def", "couplescope-tui-old", "something-else"]
