"""`couplescope --tensorboard`: a real TensorBoard with the PyTorch profiler plugin on 127.0.0.1.

The server is started through couplescope itself (as a user would), found through the
plugin's HTTP endpoints, and always stopped: with Ctrl-C (SIGINT) as a user would, and by
the fixture's `finally` if anything went wrong. The plugin rescans its logdir every 10 s,
so the wait for the runs is bounded, not fixed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import psutil
import pytest
from browser import Browser, chromium
from conftest import EXPORTED_VARIANTS as VARIANTS
from conftest import default_signals, read_line

#: one worker makes the exported run these tests and tests/test_trace_viewers.py share
pytestmark = pytest.mark.xdist_group("exported-run")
PLUGIN = "/data/plugin/pytorch_profiler"
WAIT_SECONDS = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(port: int, path: str, **query):
    url = f"http://127.0.0.1:{port}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read().decode("utf-8"))


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def couplescope(*args, tmpdir=None, **kw) -> subprocess.Popen:
    env = dict(os.environ, NO_COLOR="1", **({"TMPDIR": str(tmpdir)} if tmpdir else {}))
    return subprocess.Popen([sys.executable, "-m", "couplescope", *map(str, args)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=default_signals, **kw)


@pytest.fixture
def run_dir(exported_run):
    return exported_run


@pytest.fixture(scope="module")
def server(exported_run, tmp_path_factory):
    """(port, process) of `couplescope --tensorboard RUN_DIR --port P`, shared by the tests
    that only look at it (a server and its profiler plugin loading the traces: about 5 s
    of CPU); always stopped."""
    yield from _serve(exported_run, tmp_path_factory.mktemp("tensorboard"))


@pytest.fixture
def own_server(run_dir, tmp_path):
    """`server`, for a test that stops it. Its TMPDIR is tmp_path/tmp, for the test to see
    what it leaves there."""
    yield from _serve(run_dir, tmp_path)


def _serve(run_dir, tmp_path):
    port = free_port()
    # a short TMPDIR, as /tmp is: multiprocessing's socket paths in it have at most 107 bytes
    tmpdir = tempfile.mkdtemp(prefix="cs-tb-")
    os.symlink(tmpdir, tmp_path / "tmp")
    proc = couplescope("--tensorboard", run_dir, "--port", port, tmpdir=tmpdir)
    children: list[psutil.Process] = []
    try:
        line = read_line(proc.stdout)   # printed once TensorBoard answers
        assert line.startswith(f"TensorBoard: http://127.0.0.1:{port}/"), line + proc.stderr.read()
        proc.first_line, proc.notes = line, []
        while not proc.notes or not proc.notes[-1].startswith("from another machine"):
            proc.notes.append(read_line(proc.stdout, timeout=10))
            assert proc.notes[-1], "the address should be followed by notes ending with the ssh tunnel"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "TensorBoard should run as a child process"
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for child in children:   # never leave a server behind, even if couplescope failed to stop it
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        shutil.rmtree(tmpdir, ignore_errors=True)


@pytest.mark.e2e
def test_both_variants_open_in_the_profiler_plugin(server, run_dir):
    port, proc = server
    assert proc.first_line.startswith(f"TensorBoard: http://127.0.0.1:{port}/#pytorch_profiler  (traces in ")
    # what needs internet, what does not, the offline way, and the tunnel
    note, offline, tunnel = proc.notes
    assert "PYTORCH_PROFILER tab needs internet" in note and "www.gstatic.com" in note, note
    assert "TIME SERIES and SCALARS need nothing from the internet" in note, note
    assert offline == f"offline, open the traces with: couplescope --perfetto {run_dir}\n"
    assert tunnel.startswith(f"from another machine: ssh -N -L {port}:127.0.0.1:{port} "), tunnel
    deadline = time.monotonic() + WAIT_SECONDS
    runs = {}
    while time.monotonic() < deadline:
        runs = get_json(port, f"{PLUGIN}/runs")
        if set(VARIANTS) <= set(runs.get("runs", [])) and not runs.get("loading"):
            break
        time.sleep(1)
    assert set(VARIANTS) <= set(runs["runs"]), runs
    for name in VARIANTS:
        views = get_json(port, f"{PLUGIN}/views", run=name)
        assert {"Overview", "Operator", "Trace"} <= set(views), views
        for view in ("Overview", "Operator", "Trace"):
            assert get_json(port, f"{PLUGIN}/workers", run=name, view=view) == [name]
    tags = get_json(port, "/data/plugin/scalars/tags")
    for name in VARIANTS:
        assert "iteration_seconds/timed" in tags[name] and "phase_seconds/forward" in tags[name]


@pytest.mark.e2e
def test_ctrl_c_stops_tensorboard_cleanly_and_leaves_no_temporary_folder(own_server, tmp_path):
    """The profiler plugin's loader processes (multiprocessing) make pymp-* folders in
    TMPDIR that stayed behind after every --tensorboard; wait until the plugin has loaded
    the runs (it has made them by then), then stop it."""
    port, proc = own_server
    assert port_open(port)
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        runs = get_json(port, f"{PLUGIN}/runs")
        if set(VARIANTS) <= set(runs.get("runs", [])) and not runs.get("loading"):
            break
        time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, 130)
    assert "Traceback" not in err
    assert "stopped" in out
    assert not port_open(port)
    assert os.listdir(tmp_path / "tmp") == []


@pytest.mark.e2e
@pytest.mark.skipif(chromium() is None, reason="needs Chromium (apt-get install chromium; .ci/run installs it)")
def test_time_series_draws_the_scalars_in_a_browser_and_only_the_profiler_tab_needs_internet(server):
    """TensorBoard in headless Chromium: the Time Series card of the timed iterations holds
    every variant's last value, drawn, with no request beyond TensorBoard; the profiler
    tab's page asks www.gstatic.com for Google Charts (what --tensorboard's note says)."""
    port, _proc = server
    origin = f"http://127.0.0.1:{port}"
    with Browser() as browser:
        browser.open(f"{origin}/?tagFilter=iteration_seconds%2Ftimed#timeseries")
        cards = browser.wait_for(
            "[...document.querySelectorAll('scalar-card')].map(c => c.innerText.replace(/\\s+/g, ' '))"
            f".filter(t => {list(VARIANTS)!r}.every(v => t.includes(v)))", "the scalar card with every variant")
        assert cards[0].startswith("iteration_seconds /timed "), cards
        assert browser.evaluate("document.querySelectorAll('scalar-card line-chart canvas, "
                                "scalar-card line-chart svg path').length") > 0   # a chart was drawn
        assert [r for r in browser.requests() if not r["url"].startswith((origin, "data:", "blob:"))] == []
        browser.open(f"{origin}/#pytorch_profiler")
        browser.wait_for_request("https://www.gstatic.com/charts/loader.js", timeout=WAIT_SECONDS)


@pytest.fixture(scope="module")
def scalars_only(tmp_path_factory):
    parent = tmp_path_factory.mktemp("scalars")
    proc = subprocess.run([sys.executable, "-m", "couplescope", "--model", "simplenet", "--warmup", "1",
                           "--iterations", "3", "--profile-iterations", "0", "--telemetry-hz", "0",
                           "--quiet", "--export", str(parent)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (results,) = glob.glob(os.path.join(parent, "*", "results.json"))
    return os.path.dirname(results)


@pytest.mark.e2e
def test_a_run_without_traces_opens_on_its_scalars(scalars_only, tmp_path):
    """Exported without profiling, a run has scalars only: the address printed is the
    Time Series dashboard (the profiler plugin would list no run), and it shows them."""
    for port, proc in _serve(scalars_only, tmp_path):
        assert proc.first_line.startswith(f"TensorBoard: http://127.0.0.1:{port}/#timeseries  "
                                          "(per-iteration scalars, no profiler traces in "), proc.first_line
        assert len(proc.notes) == 1   # no profiler tab, so nothing about the internet; the tunnel
        assert get_json(port, "/data/plugins_listing")["timeseries"]["enabled"]
        tags = get_json(port, "/data/plugin/scalars/tags")
        assert "iteration_seconds/timed" in tags["simplenet-torchscript"], tags


def run_cli(*args, env=None):
    full = dict(os.environ, NO_COLOR="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "couplescope", *map(str, args)], capture_output=True,
                          text=True, timeout=60, env=full)


def test_a_directory_without_traces_exits_2_with_one_line(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    proc = run_cli("--tensorboard", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no traces" in proc.stderr, proc.stderr
    proc = run_cli("--tensorboard", tmp_path / "missing")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such directory" in proc.stderr


@pytest.mark.e2e
def test_a_port_in_use_exits_2_with_one_line(run_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = run_cli("--tensorboard", run_dir, "--port", busy.getsockname()[1])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "in use" in proc.stderr, proc.stderr


@pytest.mark.e2e
def test_missing_plugin_says_what_to_install(run_dir):
    """Marks the plugin unimportable the way Python itself does (sys.modules[name] = None)."""
    code = ("import sys; sys.modules['torch_tb_profiler'] = None\n"
            "from couplescope.frontends.command import main\n"
            f"sys.exit(main(['--tensorboard', {str(run_dir)!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "pip install tensorboard torch-tb-profiler" in proc.stderr
