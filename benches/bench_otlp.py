"""OpenTelemetry export bench (issue 35), side by side in one run. Not a test: run it by hand.

    python benches/bench_otlp.py [--files 1000] [--kib 16] [--dir /tmp/bench-otlp] [--runs 3]

* ``export_otlp`` of ``--files`` small transcripts of about ``--kib`` KiB each
  (ten bodies of the package's bench generator, cycled) into one OTLP/JSON
  Lines file, without and with ``--content``;
* the same transcripts' requests encoded as protobuf (``otlp_protobuf``);
* and sent as protobuf to a receiver on 127.0.0.1 (a ``http.server`` in this
  process that reads each body and answers 200), one request per transcript;

against the plain-Python baseline of reading the same files: ``peek_stdlib``
(``json.loads`` of every line), the least a converter of its own would do
before writing a byte. The ratio is the baseline's time over ours.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from baselines import peek_stdlib
from bench_export import small_corpus

MIB = 1024 * 1024


def best(f: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """The best wall time of ``runs`` calls, and the last call's result."""
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--kib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/bench-otlp")
    args = ap.parse_args(argv)
    from agent_transcript.fleet import export_otlp, otlp_protobuf, to_otlp

    root = Path(args.dir)
    src = small_corpus(root, args.files, args.kib)
    paths = sorted(src.rglob("*.jsonl"))
    total = sum(p.stat().st_size for p in paths)
    out = root / "out.jsonl"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; best of {args.runs}, page cache warm")
    print(f"otlp export: {len(paths):,} transcripts, {total / MIB:,.1f} MiB in all")
    base, _ = best(lambda: [peek_stdlib(p) for p in paths], args.runs)
    print(f"  baseline peek_stdlib  {base:8.3f} s   (json.loads of every line)")
    for content in (False, True):
        took, result = best(lambda: export_otlp(src, out=out, content=content), args.runs)
        size = out.stat().st_size
        print(f"  export_otlp{' --content' if content else '          '} {took:8.3f} s   "
              f"({len(paths) / took:,.0f} transcripts/s; {result.spans:,} spans; {size / MIB:,.1f} MiB out; "
              f"ratio (baseline/ours) {base / took:.2f}x)")
    requests = [to_otlp(p) for p in paths]
    took, _ = best(lambda: [otlp_protobuf(r) for r in requests], args.runs)
    print(f"  otlp_protobuf          {took:8.3f} s   ({len(requests) / took:,.0f} requests/s)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        took, result = best(lambda: export_otlp(src, endpoint=url), args.runs)
        print(f"  export_otlp --endpoint {took:8.3f} s   ({result.sent / took:,.0f} requests/s, protobuf, "
              f"to a receiver in this process; ratio (baseline/ours) {base / took:.2f}x)")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    out.unlink(missing_ok=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
