"""Headless Chromium driven over the DevTools protocol, for the tests that look at a page as a
person would (tests/test_trace_viewers.py), and for the screenshots in docs/images.

Python only: with --remote-debugging-pipe, Chromium speaks the protocol as NUL-terminated
JSON on its file descriptors 3 (in) and 4 (out), so no websocket client or npm package is
needed, and CI installs only Debian's chromium (.ci/run). The browser runs in a session of
its own with a fresh profile folder; close() ends its whole process group and removes the
folder, whatever happened before.

    python tests/browser.py URL OUT.png    # a screenshot of URL once the page has settled
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

#: flags that work in a container as root, with nothing fetched on the browser's own account
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe")


def _above_nine(fd: int) -> int:
    """The same pipe end on a descriptor above 9 (the other one is closed)."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def chromium() -> str | None:
    """Chromium's path, None when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with one page; `events` holds every protocol event seen."""

    def __init__(self, width: int = 1600, height: int = 900, timeout: float = 30.0) -> None:
        path = chromium()
        if path is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="couplescope-chromium-")
        self.events: list[dict] = []
        self._buffer = b""
        self._id = 0
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # bash puts the pipes on 3 and 4, where Chromium looks for them; moved above 9 first,
        # so that neither is already 3 or 4 when the other is put there
        to_browser, from_browser = (_above_nine(to_browser), _above_nine(from_browser))
        script = f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-'
        self._log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            ["bash", "-c", script, "bash", path, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=self._log, start_new_session=True)
        os.close(to_browser)
        os.close(from_browser)
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
            self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                     page=False)["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.send(f"{domain}.enable")
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, method: str, params: dict | None = None, page: bool = True,
             timeout: float | None = None) -> dict:
        """Send one command (to the page's session unless `page` is False); its result."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline, method)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _receive(self, deadline: float, waiting_for: str) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError(f"Chromium did not answer {waiting_for}")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium ended (exit code {self.proc.poll()}): {self.log_tail()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def open(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}...: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str, timeout: float = 60.0):
        """Evaluate `expression` until it is truthy; its value. Fails saying `what` was awaited."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:.0f} s for {what}; the page's console: "
                                     f"{self.console()[-5:]}")
            time.sleep(0.25)

    def wait_for_request(self, url: str, timeout: float = 60.0) -> dict:
        """The page's first request for `url` (made or refused), waiting for it."""
        deadline = time.monotonic() + timeout
        while True:
            self.evaluate("0")   # reading an answer takes in the events that came before it
            made = [r for r in self.requests() if r["url"] == url]
            if made:
                return made[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout:.0f} s for a request for {url}")
            time.sleep(0.25)

    def requests(self) -> list[dict]:
        """Every request the page made: url, and blocked (the reason, when the browser refused
        to send it) or failed (the network error)."""
        by_id: dict[str, dict] = {}
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Network.requestWillBeSent":
                by_id[params["requestId"]] = {"url": params["request"]["url"], "blocked": None, "failed": None}
            elif event.get("method") == "Network.loadingFailed" and params.get("requestId") in by_id:
                by_id[params["requestId"]].update(blocked=params.get("blockedReason"),
                                                  failed=params.get("errorText"))
        return list(by_id.values())

    def console(self) -> list[str]:
        lines = []
        for event in self.events:
            if event.get("method") == "Log.entryAdded":
                lines.append(event["params"]["entry"].get("text", ""))
            elif event.get("method") == "Runtime.consoleAPICalled":
                lines.append(" ".join(str(a.get("value", a.get("description", ""))) for a in event["params"]["args"]))
        return lines

    def screenshot(self, path: str) -> None:
        import base64

        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def log_tail(self) -> str:
        try:
            with open(os.path.join(self.profile, "chromium.log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        """Ask Chromium to quit; end its process group if it lingers; remove its profile."""
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", page=False, timeout=5)
            except (OSError, RuntimeError, TimeoutError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:   # its helpers (zygote, renderer, GPU process) share its group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def main(argv: list[str]) -> int:
    url, out = argv
    with Browser() as browser:
        browser.open(url)
        browser.wait_for("document.readyState === 'complete'", "the page to load")
        # the Perfetto UI: wait for its trace and the tracks the link asks for
        browser.wait_for("!window.app || (app.trace && document.body.innerText.includes('couplescope phases'))",
                         "the trace and its phase track", timeout=120)
        time.sleep(2)   # the canvas draws on the next frames
        browser.screenshot(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
