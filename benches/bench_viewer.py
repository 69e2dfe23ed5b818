"""The viewer's figures (issue 14's bench). Not a test: run it by hand.

    python benches/bench_viewer.py [--mb 1024] [--dir /tmp/bench-viewer] [--files 10000]

Writes the bench's yardstick transcript of ``--mb`` MiB (the bench generator,
seed 1) unless it is there, then, each in a fresh child process so that its
peak RSS is its own: ``Session.load`` of it, and ``agent-transcript html`` of
it (a folder of pages; goal: at most 3x load's time, at most 200 MB). Then
``serve``'s tail page of it: the server's time to answer ``GET /t/<name>``,
and the first paint of that page in headless Chromium, from the browser's own
Navigation Timing and Paint Timing entries (goal: under 1 s; skipped without
chromium and selenium). Then the picker over ``--files`` small transcripts
(the rows, twice, and ``GET /``; goal: under 1 s).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

MIB = 1024 * 1024

_CHILD = """
import resource, sys, time
t = time.perf_counter()
{body}
dt = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_SELF)
print(dt, u.ru_maxrss, u.ru_utime + u.ru_stime)
"""

LOAD = """
from agent_transcript import Session
s = Session.load(sys.argv[1]); n = len(s.messages); s.close()
"""
HTML = """
from agent_transcript.cli import main
assert main(["html", sys.argv[1], "-o", sys.argv[2], "--pages"]) == 0
"""


def child(body: str, *args: str) -> tuple[float, float, float]:
    """Wall time, peak RSS (MB) and CPU time (user + system, every thread) of ``body`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _CHILD.format(body=body), *args], capture_output=True, text=True, check=True)
    dt, rss, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(dt), int(rss) / 1024, float(cpu)  # ru_maxrss is KiB on Linux


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=1024)
    p.add_argument("--dir", default="/tmp/bench-viewer")
    p.add_argument("--files", type=int, default=10_000)
    args = p.parse_args(argv)
    from agent_transcript.bench.generator import write_transcript
    from agent_transcript.viewer import make_server

    where = Path(args.dir)
    where.mkdir(parents=True, exist_ok=True)
    src = where / f"yardstick-{args.mb:g}.jsonl"
    if not src.exists():
        t = time.perf_counter()
        write_transcript(src, args.mb)
        print(f"generated {src} ({src.stat().st_size / MIB:,.0f} MiB) in {time.perf_counter() - t:.1f} s")
    size = src.stat().st_size / MIB
    load_t, load_rss, load_cpu = child(LOAD, str(src))
    print(f"load:  {load_t:7.2f} s  peak RSS {load_rss:7.1f} MB  ({size / load_t:,.0f} MiB/s; CPU {load_cpu:.2f} s)")
    out = where / "site"
    shutil.rmtree(out, ignore_errors=True)
    html_t, html_rss, html_cpu = child(HTML, str(src), str(out))
    pages = len(os.listdir(out / "p"))
    print(f"html:  {html_t:7.2f} s  peak RSS {html_rss:7.1f} MB  ({size / html_t:,.1f} MiB/s, {pages:,} pages; {html_t / load_t:.1f}x load; "
          f"CPU {html_cpu:.2f} s, {html_cpu / load_cpu:.1f}x load's)")

    # serve: the tail page of the big one (the server's answer, then the browser's first paint).
    folder = where / "one"
    folder.mkdir(exist_ok=True)
    link = folder / src.name
    if not link.exists():
        os.link(src, link)  # a hard link: serve refuses a symbolic link out of its folder
    server = make_server(str(folder), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    t = time.perf_counter()
    c.request("GET", f"/t/{src.name}?token={server.token}", headers={"Host": f"127.0.0.1:{server.port}"})
    body = c.getresponse().read()
    print(f"serve: the tail page of {size:,.0f} MiB in {time.perf_counter() - t:.3f} s ({len(body) / MIB:.2f} MiB of HTML)")
    paint = _first_paint(f"http://127.0.0.1:{server.port}/t/{src.name}?token={server.token}")
    if paint is not None:
        print(f"serve: first paint of the tail of {size:,.0f} MiB: {paint['firstContentfulPaint'] / 1000:.3f} s "
              f"(response {paint['responseEnd'] / 1000:.3f} s, DOM content loaded {paint['domContentLoaded'] / 1000:.3f} s; "
              "the browser's Navigation and Paint Timing)")
    server.shutdown()

    # The picker over many small transcripts.
    many = where / f"many-{args.files}"
    if not many.exists():
        many.mkdir()
        head = _head_lines(src, 40)
        for k in range(args.files):
            (many / f"run-{k:05d}.jsonl").write_bytes(head)
    server = make_server(str(many), 0)
    t = time.perf_counter()
    rows = server.transcripts()
    first = time.perf_counter() - t
    t = time.perf_counter()
    server.transcripts()
    again = time.perf_counter() - t
    threading.Thread(target=server.serve_forever, daemon=True).start()
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    t = time.perf_counter()
    c.request("GET", f"/?token={server.token}", headers={"Host": f"127.0.0.1:{server.port}"})
    page = c.getresponse().read()
    get = time.perf_counter() - t
    server.shutdown()
    print(f"picker: {len(rows):,} transcripts (fleet.list_transcripts) in {first:.2f} s, again {again:.2f} s; "
          f"GET / {get:.2f} s ({len(page) / MIB:.1f} MiB)")
    return 0


PAINT_TIMING = """
var n = performance.getEntriesByType('navigation')[0];
var p = performance.getEntriesByType('paint').filter(function (e) { return e.name === 'first-contentful-paint'; })[0];
if (!n || !p) return null;
return {responseStart: n.responseStart, responseEnd: n.responseEnd, domContentLoaded: n.domContentLoadedEventEnd,
        firstContentfulPaint: p.startTime};
"""


def _first_paint(url: str) -> dict[str, float] | None:
    """The Navigation and Paint Timing of ``url`` in a fresh headless Chromium (None without one)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if chromium is None or not os.path.exists(driver_path):
        print("serve: no chromium here, first paint not measured")
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("serve: no selenium here (the test extra), first paint not measured")
        return None
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.get("about:blank")  # the browser's own start is not the page's
        driver.get(url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = driver.execute_script(PAINT_TIMING)
            if got:
                return dict(got)
            time.sleep(0.05)
        return None
    finally:
        driver.quit()


def _head_lines(src: Path, n: int) -> bytes:
    out = []
    with src.open("rb") as f:
        for _ in range(n):
            out.append(f.readline())
    return b"".join(out)


if __name__ == "__main__":
    sys.exit(main())
