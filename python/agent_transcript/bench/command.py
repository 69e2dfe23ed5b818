"""``agent-transcript bench``: the performance targets, measured side by side in one run.

Usage: ``agent-transcript bench [--mb 1024] [--seed 2] [--dir D] [--json] [--profile small]``
(``main(argv)`` here; the command line calls it).

Without ``--mb`` it is a quick run, seconds long, on a 16 MiB file: every row is
measured and shown, but the targets are set for the 1 GiB yardstick
(``--mb 1024``), so a quick run does not judge them (it exits 0 unless a
measurement failed). ``--mb N`` runs on N MiB and judges every target.

Every row is a ratio between two things measured in this one process run, on
this machine, with the page cache warm, so the figures compare like with like
whatever the hardware. Times are the best of a few runs; peak RSS is measured
in a fresh interpreter per load (``VmHWM``, interpreter included).

Choices made here, and why:

* **The file.** ``agent_transcript.bench.generator`` writes it: the project's
  benchmark generator carried in the package (byte-for-byte the shared
  ``gen_transcript.py``), so a pip-installed user can run the bench. It is kept
  in ``--dir`` (default ``$XDG_CACHE_HOME/agent-transcript/bench``) with a
  manifest, and reused when the manifest matches. One pass writes the
  ``--mb`` file and its ``--mb/10.24`` prefix (for ``--mb 1024``, exactly the
  generator's ``--mb 100`` file). Generating 1 GiB takes a few minutes of pure
  Python, once; a run on a reused file takes well under two minutes.
* **The baselines.** ``agent_transcript.bench.baselines``: a plain-Python loader,
  peek and append loop with Session's exact semantics, parameterised by the
  per-line parser (``json`` or ``orjson``). The issue keeps the baselines in
  ``benches/``; but a command that ships in the wheel must reach them, and two
  copies would drift, so that stdlib-only module is the one copy and
  ``benches/baselines.py`` loads it by path. orjson is never a dependency: the
  rows that compare against an orjson baseline say "n/a" when it is not
  installed (the user's append loop then uses ``json.dumps``, and says so).
* **The tail scan.** SPEC has no public call that runs only the tail check
  (``load`` and ``check`` go on to read the whole file). ``_tail_scan_hook``
  times the read model's ``agent_transcript.inspect.tail(path)`` (open, the
  core's tail check, close) and reports the bytes it read; if that is gone,
  the row reads "not measured".
* **The GIL.** A second Python thread counts while a load of the big file
  runs; its rate is compared with its rate over the same wall time while the
  main thread sleeps. ``>= 0.5`` passes; the longest stall is shown too.
* **Memory scaling.** The generator's compactions keep the live conversation
  at a few hundred messages however long the file grows, so the growth of
  peak RSS from the small file to the big one, per byte of file added, says
  whether memory follows the file or the live messages. At most 0.10 (a
  tenth of the added bytes) passes: room for an index of a few words per
  line, none for a copy of the file or of every payload.

Exit status: 0 when every measured target is met (a quick run: when every
measurement ran), 1 when one is missed or a measurement failed, 2 when the
bench cannot run (no ``Session``).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from . import baselines as _baselines
from . import generator as _bench_gen
from .measure import (MIB, _read_chars, _tail_scan_hook, _warm, best_in_child, best_of, gil_probe, in_child, per_op,
                      per_op_and_cpu)

__all__ = ["main"]


QUICK_MB = 16.0                # the default: a run of seconds, whose targets are shown, not judged
GENERATOR_VERSION = 1          # bump when the generator's output changes: cached files are remade
SMALL_RATIO = 10.24            # 1 GiB : 100 MiB
MESSAGE_TEXT = ("Please read src/agent/loop.py and tell me why the resume path sends the tool result "
                "twice; keep the answer short, cite line numbers, and do not touch the tests yet.")


# ------------------------------------------------------------------- output

@dataclass
class Row:
    """One target: what was measured, the ratio, and whether it is met.

    ``ok`` is None when the row could not be measured here (``note`` says why).
    """

    key: str
    what: str
    ours: str
    theirs: str
    ratio: float | None
    target: str
    ok: bool | None
    note: str = ""
    unit: str = "x"


def _fmt_time(s: float | None) -> str:
    if s is None or math.isnan(s):
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    return f"{n / MIB:,.1f} MiB"


def _fmt_ratio(r: float | None, unit: str = "x") -> str:
    return "-" if r is None else f"{r:.3g}{unit}"


def _fmt_size(n: int) -> str:
    mib = n / MIB
    return f"{mib:,.0f} MiB" if mib >= 10 else f"{mib:.2g} MiB"


class _Log:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.start = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.start:6.1f}s] {msg}", file=sys.stderr, flush=True)


# -------------------------------------------------------------------- files

@dataclass
class Files:
    """The generated transcripts this run measures."""

    big: Path
    small: Path
    size: int
    small_size: int
    torn_tail: bytes
    generated_s: float | None      # None: reused


def default_dir() -> Path:
    """Where generated transcripts are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent-transcript" / "bench"


def _copy_prefix(src: Path, dst: Path, length: int) -> None:
    tmp = dst.with_name(dst.name + ".tmp")
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        left = length
        while left:
            chunk = fin.read(min(left, 8 * MIB))
            if not chunk:
                raise OSError(f"{src} is shorter than {length} bytes")
            fout.write(chunk)
            left -= len(chunk)
    os.replace(tmp, dst)


def prepare(directory: Path, mb: float, seed: int, log: Callable[[str], None],
            profile: str = "yardstick") -> Files:
    """The ``mb`` transcript and its ``mb/10.24`` prefix in ``directory``: reused or generated."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    small_mb = mb / SMALL_RATIO
    kind = "" if profile == "yardstick" else f"{profile}-"
    stem = f"transcript-{kind}s{seed}-{mb:g}mb"
    big = directory / f"{stem}.jsonl"
    small = directory / f"transcript-{kind}s{seed}-{small_mb:g}mb.jsonl"
    manifest_path = directory / f"{stem}.manifest.json"
    want: dict[str, Any] = {"generator": GENERATOR_VERSION, "mb": mb, "seed": seed, "small_mb": small_mb}
    if profile != "yardstick":
        want["profile"] = profile
    try:
        manifest = json.loads(manifest_path.read_text())
        if {k: manifest.get(k) for k in want} == want and big.stat().st_size == manifest["size"]:
            if not small.exists() or small.stat().st_size != manifest["small_size"]:
                log(f"deriving {small.name} from {big.name}")
                _copy_prefix(big, small, manifest["small_size"])
            log(f"reusing {big}")
            return Files(big, small, manifest["size"], manifest["small_size"],
                         bytes.fromhex(manifest["torn_tail"]), None)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    log(f"generating {big} ({mb:g} MiB, seed {seed}; pure Python, about {max(mb / 7, 1):.0f} s)")
    t0 = time.perf_counter()
    tmp = big.with_name(big.name + ".tmp")
    gen = _bench_gen.write_transcript(tmp, mb, seed, marks=[small_mb], profile=profile)
    os.replace(tmp, big)
    small_size = gen.marks.get(small_mb, gen.size)
    _copy_prefix(big, small, small_size)
    generated_s = time.perf_counter() - t0
    manifest_path.write_text(json.dumps({**want, "size": gen.size, "small_size": small_size,
                                         "torn_tail": gen.torn_tail.hex()}))
    return Files(big, small, gen.size, small_size, gen.torn_tail, generated_s)


# ------------------------------------------------------------------- the run

def _ratio_row(key: str, what: str, ours: float | None, theirs: float | None, *, higher_is: str,
               limit: float, fmt: Callable[[float | None], str] = _fmt_time, note: str = "") -> Row:
    """A row whose ratio is ``theirs/ours`` ("faster", at least ``limit``) or ``ours/theirs``
    ("within", at most ``limit``)."""
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        target = f">= {limit:g}x" if higher_is == "faster" else f"<= {limit:g}x"
        return Row(key, what, fmt(ours), fmt(theirs), None, target, None, note)
    if higher_is == "faster":
        ratio = theirs / ours
        return Row(key, what, fmt(ours), fmt(theirs), ratio, f">= {limit:g}x",
                   ratio >= limit, note)
    ratio = ours / theirs
    return Row(key, what, fmt(ours), fmt(theirs), ratio, f"<= {limit:g}x", ratio <= limit, note)


class Bench:
    """One bench run: the measurements (``m``) and the rows built from them."""

    def __init__(self, files: Files, log: Callable[[str], None], scratch: Path) -> None:
        from .. import Message, Session   # imported here: the module must import without them

        self.Session: Any = Session
        self.Message: Any = Message
        self.files = files
        self.log = log
        self.scratch = scratch
        self.orjson = _baselines.have_orjson()
        self.m: dict[str, Any] = {}
        self.rows: list[Row] = []
        self.errors: list[str] = []
        self.scale = max(files.size / (1024 * MIB), 0.01)   # budgets scale with the file
        self.appends = 5000 if files.size >= 64 * MIB else 500  # per batch

    # --- helpers

    def load_session(self, path: Path) -> Any:
        return self.Session.load(path)

    @staticmethod
    def close(session: Any) -> None:
        session.close()

    def section(self, name: str, fn: Callable[[], None]) -> None:
        self.log(name)
        try:
            fn()
        except Exception as e:  # a failed measurement is reported, and the others still run
            self.errors.append(f"{name}: {type(e).__name__}: {e}")
            self.log(f"  FAILED: {type(e).__name__}: {e}")

    def budget(self, seconds: float) -> float:
        return max(seconds * self.scale, 0.5)

    # --- measurements

    def measure_load(self) -> None:
        f = self.files
        m = self.m
        wc = shutil.which("wc")
        if wc is not None:
            m["wc_l_s"], _ = best_of(
                lambda: subprocess.run([wc, "-l", str(f.big)], check=True, stdout=subprocess.DEVNULL),
                runs=5, budget=self.budget(2))

        def count_and_close(s: Any) -> None:
            m["live_messages"], m["events"] = len(s.message_ids), len(s.events)
            s.close()

        m["load_s"], m["load_runs"] = best_of(lambda: self.load_session(f.big), runs=5, min_runs=2,
                                              budget=self.budget(5), after=count_and_close)
        m["load_small_s"], m["load_small_runs"] = best_of(lambda: self.load_session(f.small), runs=7,
                                                          min_runs=3, budget=self.budget(2), after=self.close)

    def measure_baselines(self) -> None:
        """The plain-Python baselines, each in a fresh interpreter: its time, and its peak RSS."""
        f, m = self.files, self.m
        if self.orjson:
            m["orjson_load_s"], run = best_in_child("orjson", f.big, runs=2, budget=self.budget(15))
            m["rss_orjson_load"] = run.peak_rss
            m["live_messages_orjson"] = run.live
            m["orjson_peek_s"], _ = best_in_child("peek-orjson", f.big, runs=2, budget=self.budget(15))
        m["stdlib_load_s"], run = best_in_child("stdlib", f.big, runs=1, budget=0)
        m["rss_stdlib_load"] = run.peak_rss

    def measure_peek(self) -> None:
        f = self.files
        self.m["peek_s"], self.m["peek_runs"] = best_of(lambda: self.Session.peek(f.big), runs=3,
                                                        budget=self.budget(4))

    def measure_rss(self) -> None:
        f, m = self.files, self.m
        m["rss_idle"] = in_child("idle", f.big).peak_rss
        big = in_child("session", f.big)
        small = in_child("session", f.small)
        m["rss_load"], m["live_messages_big"] = big.peak_rss, big.live
        m["rss_load_small"], m["live_messages_small"] = small.peak_rss, small.live

    def measure_tail_scan(self) -> None:
        scan = _tail_scan_hook()
        if scan is None:
            return
        path = str(self.files.big)
        r0 = _read_chars()
        said = scan(path)
        r1 = _read_chars()
        if said is not None:
            self.m["tail_scan_read_bytes"] = said
        elif r0 is not None and r1 is not None:
            self.m["tail_scan_read_bytes"] = r1 - r0
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            scan(path)
            times.append(time.perf_counter() - t0)
        self.m["tail_scan_s"] = min(times)

    def measure_gil(self) -> None:
        probe = gil_probe(lambda: self.load_session(self.files.big), self.close, idle_cap=self.budget(5))
        self.m["gil"] = asdict(probe) | {"ratio": probe.ratio}

    def _message(self) -> Any:
        return self.Message.user(MESSAGE_TEXT)

    def measure_append(self) -> None:
        m = self.m
        msg = self._message()
        msg_dict = msg.to_dict()
        m["append_message_bytes"] = len(_baselines.stdlib_dumps(msg_dict))
        n, batches = self.appends, 7
        fresh = self.Session.create(self.scratch / "fresh.jsonl")
        user = _baselines.UserAppender(self.scratch / "user.jsonl",
                                       None if self.orjson else _baselines.stdlib_dumps)
        raw_fd = os.open(self.scratch / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fresh.append_message(msg)
            with open(self.scratch / "fresh.jsonl", "rb") as fh:
                line = fh.read().splitlines(keepends=True)[-1]
            m["append_line_bytes"] = len(line)

            def write_line(data: bytes) -> int:
                return os.write(raw_fd, data)

            best = {"session": math.inf, "user": math.inf, "write": math.inf}
            for _ in range(batches):          # interleaved, so drift hits all three alike
                best["session"] = min(best["session"], per_op(fresh.append_message, msg, n))
                best["user"] = min(best["user"], per_op(user.append_message, msg_dict, n))
                best["write"] = min(best["write"], per_op(write_line, line, n))
            m["append_s"], m["user_append_s"], m["write_s"] = best["session"], best["user"], best["write"]
        finally:
            fresh.close()
            user.close()
            os.close(raw_fd)

    def measure_append_after_load(self) -> None:
        msg = self._message()
        copy = self.scratch / "loaded.jsonl"
        shutil.copyfile(self.files.big, copy)
        n, batches = self.appends, 7
        fresh = self.Session.create(self.scratch / "fresh2.jsonl")
        loaded = self.load_session(copy)
        try:
            best_fresh = best_loaded = math.inf
            for _ in range(batches):
                best_fresh = min(best_fresh, per_op(fresh.append_message, msg, n))
                best_loaded = min(best_loaded, per_op(loaded.append_message, msg, n))
            self.m["append_fresh_s"], self.m["append_after_load_s"] = best_fresh, best_loaded
        finally:
            fresh.close()
            loaded.close()
            copy.unlink()

    def measure_repair(self) -> None:
        f = self.files
        m = self.m
        dst = self.scratch / "cp.jsonl"
        cp = shutil.which("cp")
        if cp is not None:
            def run_cp() -> None:
                subprocess.run([cp, str(f.big), str(dst)], check=True)

            m["cp_s"], _ = best_of(run_cp, runs=2, budget=self.budget(3), after=lambda _: dst.unlink())
        torn = self.scratch / "torn.jsonl"
        times: list[float] = []
        warnings: list[str] = []
        deadline = time.perf_counter() + self.budget(12)
        while len(times) < 2 and (not times or time.perf_counter() + 2 * times[0] < deadline):
            shutil.copyfile(f.big, torn)
            with open(torn, "ab") as fh:
                fh.write(f.torn_tail)
                fh.flush()
                os.fsync(fh.fileno())      # so the repair's own fsync does not pay for this copy
            gc.collect()
            t0 = time.perf_counter()
            s = self.load_session(torn)
            times.append(time.perf_counter() - t0)
            warnings = list(s.warnings)
            s.close()
            if torn.stat().st_size != f.size:
                raise AssertionError(f"the torn copy was not repaired to {f.size} bytes")
        torn.unlink()
        m["torn_load_s"] = min(times)
        m["torn_load_warnings"] = warnings

    # --- rows

    def build_rows(self) -> None:
        m, f = self.m, self.files
        gib = _fmt_size(f.size)
        no_orjson = "" if self.orjson else "orjson not installed"
        R = self.rows.append
        R(_ratio_row("load_vs_orjson", f"Session.load ({gib}) vs baseline_orjson", m.get("load_s"),
                     m.get("orjson_load_s"), higher_is="faster", limit=10, note=no_orjson))
        R(_ratio_row("load_vs_stdlib", f"Session.load ({gib}) vs baseline_stdlib", m.get("load_s"),
                     m.get("stdlib_load_s"), higher_is="faster", limit=20))
        R(_ratio_row("load_vs_wc", f"Session.load ({gib}) vs wc -l", m.get("load_s"), m.get("wc_l_s"),
                     higher_is="within", limit=5, note="" if "wc_l_s" in m else "no wc"))
        R(_ratio_row("rss_vs_orjson", "peak RSS of that load vs baseline_orjson's", m.get("rss_load"),
                     m.get("rss_orjson_load"), higher_is="within", limit=0.25, fmt=_fmt_bytes,
                     note=no_orjson or "fresh interpreter each, interpreter included"))
        R(_ratio_row("peek_vs_orjson", f"Session.peek ({gib}) vs orjson peek", m.get("peek_s"),
                     m.get("orjson_peek_s"), higher_is="faster", limit=5, note=no_orjson))
        size_note = (f"{m['append_line_bytes']}-byte line, message {m['append_message_bytes']} bytes"
                     if "append_line_bytes" in m else "")
        R(_ratio_row("append_vs_user", "append_message vs the user's "
                     + ("orjson" if self.orjson else "json.dumps") + " loop",
                     m.get("append_s"), m.get("user_append_s"), higher_is="faster", limit=3,
                     note=size_note if self.orjson else "orjson not installed: json.dumps loop"))
        R(_ratio_row("append_vs_write", "append_message vs bare os.write of the same bytes",
                     m.get("append_s"), m.get("write_s"), higher_is="within", limit=3, note=size_note))
        R(_ratio_row("append_after_load", f"append after loading {gib} vs to a fresh session",
                     m.get("append_after_load_s"), m.get("append_fresh_s"), higher_is="within", limit=1.10))
        size_ratio = f.size / f.small_size if f.small_size else None
        limit = 11 * size_ratio / SMALL_RATIO if size_ratio else 11
        R(_ratio_row("load_scaling_time", f"load time, {gib} vs {_fmt_size(f.small_size)}",
                     m.get("load_s"), m.get("load_small_s"), higher_is="within", limit=round(limit, 2),
                     note=f"file sizes {size_ratio:.2f}x" if size_ratio else ""))
        self.rows.append(self._memory_scaling_row())
        R(_ratio_row("repair_vs_cp", f"repair of a torn {gib} file: extra cost vs cp",
                     (m["torn_load_s"] - m["load_s"]) if "torn_load_s" in m and "load_s" in m else None,
                     m.get("cp_s"), higher_is="within", limit=1,
                     note="extra = load(torn) - load(whole); cp has no fsync, the repair does"))
        self.rows.append(self._tail_row())
        self.rows.append(self._gil_row())

    def _memory_scaling_row(self) -> Row:
        m, f = self.m, self.files
        what = "memory follows live messages, not file size"
        if "rss_load" not in m or "rss_load_small" not in m:
            return Row("load_scaling_memory", what, "-", "-", None, "<= 0.1", None)
        grown = m["rss_load"] - m["rss_load_small"]
        slope = grown / (f.size - f.small_size) if f.size > f.small_size else 0.0
        note = (f"peak RSS {_fmt_bytes(m['rss_load_small'])} -> {_fmt_bytes(m['rss_load'])}; "
                f"live messages {m.get('live_messages_small')} -> {m.get('live_messages_big')}; "
                f"ratio = RSS growth / file growth")
        return Row("load_scaling_memory", what, _fmt_bytes(grown),
                   f"+{_fmt_bytes(f.size - f.small_size)} file", slope, "<= 0.1", slope <= 0.1, note, unit="")

    def _tail_row(self) -> Row:
        m = self.m
        what = "tail scan of the big file"
        if "tail_scan_s" not in m:
            return Row("tail_scan", what, "-", "-", None, "< 1 ms", None,
                       "not measured: no agent_transcript.inspect.tail (see _tail_scan_hook)")
        read = m.get("tail_scan_read_bytes")
        note = f"open + tail check + close; read {read:,} bytes" if read is not None else "open + tail check + close"
        return Row("tail_scan", what, _fmt_time(m["tail_scan_s"]), "1 ms", m["tail_scan_s"] / 1e-3,
                   "< 1 ms", m["tail_scan_s"] < 1e-3, note)

    def _gil_row(self) -> Row:
        what = "another thread runs during a big load"
        g = self.m.get("gil")
        if g is None:
            return Row("gil", what, "-", "-", None, ">= 0.5", None)
        alone = self.m.get("load_s")
        slowed = f" (alone: {_fmt_time(alone)})" if alone else ""
        return Row("gil", what, f"{g['rate_load']:,.0f}/s", f"{g['rate_idle']:,.0f}/s idle", g["ratio"],
                   ">= 0.5", g["ratio"] >= 0.5,
                   f"a counting thread's rate; longest stall {_fmt_time(g['longest_stall_s'])}; "
                   f"the load took {_fmt_time(g['load_s'])} beside it{slowed}")

    def run(self) -> None:
        self.section("load: Session, wc -l, the small file", self.measure_load)
        self.section("tail scan", self.measure_tail_scan)
        self.section("GIL probe", self.measure_gil)
        self.section("peek: Session", self.measure_peek)
        self.section("peak RSS of Session.load, a fresh interpreter per load", self.measure_rss)
        self.section("baselines, a fresh interpreter each: "
                     + ("orjson load, orjson peek, " if self.orjson else "") + "stdlib load", self.measure_baselines)
        self.section("append", self.measure_append)
        self.section("append after load", self.measure_append_after_load)
        self.section("repair of a torn copy, and cp", self.measure_repair)
        self.build_rows()


class SmallBench(Bench):
    """``--profile small``: the cost per line, on lines like imported transcripts'.

    Rows: load's rate (GB/s) and peak memory per line, load, peek and
    ``entries`` against the orjson baselines, append_message and
    append_messages against a bare ``os.write`` of the same bytes. Every
    ratio compares two things measured in this run, interleaved where they
    are short, best of N.
    """

    batch = 64  # messages per append_messages call

    def measure_small_load(self) -> None:
        f, m = self.files, self.m
        m["lines"] = _warm(f.big)
        m["load_s"], m["load_runs"] = best_of(lambda: self.load_session(f.big), runs=9, min_runs=3,
                                              budget=self.budget(40), after=self.close)
        m["peek_s"], m["peek_runs"] = best_of(lambda: self.Session.peek(f.big), runs=7, min_runs=3,
                                              budget=self.budget(40))
        s = self.load_session(f.big)
        try:
            entries = s.entries
            m["live_messages"] = len(entries)
            numbers = {e.line for e in entries}
            m["entries_s"], _ = best_of(lambda: s.entries, runs=9, min_runs=3, budget=self.budget(20))
        finally:
            s.close()
        if self.orjson:
            loads = _baselines._orjson().loads
            with open(f.big, "rb") as fh:
                lines = [raw for n, raw in enumerate(fh, 1) if n in numbers]
            m["orjson_entries_s"], _ = best_of(lambda: [loads(x) for x in lines], runs=9, min_runs=3,
                                               budget=self.budget(20))

    def measure_small_children(self) -> None:
        f, m = self.files, self.m
        m["rss_idle"] = in_child("idle", f.big).peak_rss
        m["rss_load"] = in_child("session", f.big).peak_rss
        m["rss_peek"] = in_child("peek", f.big).peak_rss
        if self.orjson:
            m["orjson_load_s"], run = best_in_child("orjson", f.big, runs=2, budget=self.budget(60))
            m["rss_orjson_load"] = run.peak_rss
            m["orjson_peek_s"], _ = best_in_child("peek-orjson", f.big, runs=2, budget=self.budget(60))
        if _baselines.have_duckdb():
            # Interleaved with loads in fresh interpreters too, so both pay the same.
            best_duck, best_load = math.inf, math.inf
            for _ in range(3):
                best_duck = min(best_duck, in_child("duckdb", f.big).seconds)
                best_load = min(best_load, in_child("session", f.big).seconds)
            m["duckdb_s"], m["load_child_s"] = best_duck, best_load

    def measure_small_append(self) -> None:
        m = self.m
        msg = self._message()
        # Short batches, many of them: on a shared machine a batch longer than
        # a time slice is mostly the wait for a core, and the slower side's
        # batches would be hit more often than the faster side's.
        n, batches, k = 1000, 25, self.batch
        one = self.Session.create(self.scratch / "one.jsonl")
        many = self.Session.create(self.scratch / "many.jsonl")
        raw_fd = os.open(self.scratch / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            one.append_message(msg)
            many.append_messages([msg] * k)
            with open(self.scratch / "one.jsonl", "rb") as fh:
                line = fh.read().splitlines(keepends=True)[-1]
            with open(self.scratch / "many.jsonl", "rb") as fh:
                block = b"".join(fh.read().splitlines(keepends=True)[-k:])
            m["append_line_bytes"] = len(line)
            msgs = [msg] * k
            rounds = max(n // k, 1)

            def write_line(data: bytes) -> int:
                return os.write(raw_fd, data)

            best = dict.fromkeys(("append", "write", "append_messages", "write_block"), math.inf)
            cpu = dict.fromkeys(best, math.inf)
            runs: tuple[tuple[str, Callable[[Any], Any], Any, int, int], ...] = (
                ("append", one.append_message, msg, n, 1),
                ("write", write_line, line, n, 1),
                ("append_messages", many.append_messages, msgs, rounds, k),
                ("write_block", write_line, block, rounds, k))
            for _ in range(batches):          # interleaved, so drift hits all alike
                for key, fn, arg, count, per in runs:
                    wall, used = per_op_and_cpu(fn, arg, count)
                    best[key] = min(best[key], wall / per)
                    cpu[key] = min(cpu[key], used / per)
            m["append_s"], m["write_s"] = best["append"], best["write"]
            m["append_messages_s"], m["write_block_s"] = best["append_messages"], best["write_block"]
            m["append_cpu_s"], m["write_cpu_s"] = cpu["append"], cpu["write"]
            m["append_messages_cpu_s"], m["write_block_cpu_s"] = cpu["append_messages"], cpu["write_block"]
        finally:
            one.close()
            many.close()
            os.close(raw_fd)

    def build_rows(self) -> None:
        m, f = self.m, self.files
        size = _fmt_size(f.size)
        lines = m.get("lines") or 0
        no_orjson = "" if self.orjson else "orjson not installed"
        R = self.rows.append
        per_line = f"{lines:,} lines, {f.size / lines:.0f} B a line on average" if lines else ""
        if "load_s" in m:
            rate = f.size / m["load_s"] / 1e9
            R(Row("small_load_rate", f"Session.load ({size} of small lines), replay included",
                  _fmt_time(m["load_s"]), "1 GB/s", rate, ">= 1 GB/s", rate >= 1.0,
                  f"{per_line}; {m['load_s'] / lines * 1e9:.0f} ns a line" if lines else "", unit=" GB/s"))
        R(_ratio_row("small_load_vs_orjson", f"Session.load ({size}) vs baseline_orjson", m.get("load_s"),
                     m.get("orjson_load_s"), higher_is="faster", limit=15,
                     note=no_orjson or "15x orjson: 6x DuckDB read_json, which the issue measured 2.6x "
                                       "faster than orjson per line"))
        R(_ratio_row("small_load_vs_duckdb", f"Session.load ({size}) vs DuckDB read_json", m.get("load_child_s"),
                     m.get("duckdb_s"), higher_is="faster", limit=6,
                     note="" if "duckdb_s" in m else "duckdb not installed"))
        for key, what, rss in (("small_rss_per_line", "peak memory of that load per line", "rss_load"),
                               ("small_peek_rss_per_line", "peak memory of Session.peek per line", "rss_peek")):
            if rss in m and "rss_idle" in m and lines:
                extra = (m[rss] - m["rss_idle"]) / lines
                R(Row(key, what, f"{extra:.1f} B", "64 B", extra / 64, "<= 1x", extra <= 64,
                      f"above an idle interpreter ({_fmt_bytes(m['rss_idle'])}), fresh interpreter; "
                      f"baseline_orjson's: {(m.get('rss_orjson_load', m['rss_idle']) - m['rss_idle']) / lines:.0f} B",
                      unit="x"))
        R(_ratio_row("small_peek_vs_orjson", f"Session.peek ({size}) vs orjson peek", m.get("peek_s"),
                     m.get("orjson_peek_s"), higher_is="faster", limit=5, note=no_orjson))
        R(_ratio_row("small_entries_vs_orjson", "Session.entries vs orjson.loads of the same lines",
                     m.get("entries_s"), m.get("orjson_entries_s"), higher_is="within", limit=2,
                     note=no_orjson or f"{m.get('live_messages', 0):,} live messages, as Entry/Message objects"))
        note = f"{m['append_line_bytes']}-byte line" if "append_line_bytes" in m else ""

        def cpu_note(ours: str, theirs: str) -> str:
            if ours not in m or theirs not in m or not m[theirs]:
                return ""
            return (f"; CPU time (this thread's, best batch): {_fmt_time(m[ours])} vs "
                    f"{_fmt_time(m[theirs])}, {m[ours] / m[theirs]:.2f}x")

        R(_ratio_row("small_append_vs_write", "append_message vs bare os.write of the same bytes",
                     m.get("append_s"), m.get("write_s"), higher_is="within", limit=2,
                     note=note + cpu_note("append_cpu_s", "write_cpu_s")))
        R(_ratio_row("small_append_messages_vs_write",
                     f"append_messages({self.batch}), per message, vs one os.write of the same block",
                     m.get("append_messages_s"), m.get("write_block_s"), higher_is="within", limit=4,
                     note=note + cpu_note("append_messages_cpu_s", "write_block_cpu_s")))

    def run(self) -> None:
        self.section("small lines: load, peek, entries", self.measure_small_load)
        self.section("small lines: peak memory and the orjson baselines, a fresh interpreter each",
                     self.measure_small_children)
        self.section("small lines: append_message, append_messages, os.write", self.measure_small_append)
        self.build_rows()


def _table(rows: Sequence[Row]) -> Iterator[str]:
    head = ("target", "agent-transcript", "baseline", "ratio", "want", "")
    body = [(r.what, r.ours, r.theirs, _fmt_ratio(r.ratio, r.unit), r.target,
             {True: "PASS", False: "FAIL", None: "n/a"}[r.ok]) for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    yield fmt(head)
    yield "  ".join("-" * w for w in widths)
    for r, cells in zip(rows, body):
        yield fmt(cells)
        if r.note:
            yield "    " + r.note


def main(argv: list[str] | None = None) -> int:
    """Run the bench; returns the exit status (see the module docstring)."""
    ap = argparse.ArgumentParser(
        prog="agent-transcript bench",
        description="Measure Session against plain-Python baselines, side by side, in one run.")
    ap.add_argument("--mb", type=float, default=None,
                    help=f"size of the big transcript in MiB, its targets judged; the targets are set for "
                         f"1024, the 1 GiB yardstick (a few minutes to generate, once, then about 75 s). "
                         f"Without it: a quick run of seconds on {QUICK_MB:g} MiB, targets shown, not judged")
    ap.add_argument("--seed", type=int, default=2, help="generator seed (default 2)")
    ap.add_argument("--dir", type=Path, default=None,
                    help=f"where to keep and reuse generated transcripts (default {default_dir()})")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--profile", choices=("yardstick", "small"), default="yardstick",
                    help="the yardstick generator's lines (4.5 KB on average), or small lines like "
                         "imported transcripts' (median 250-450 B): load, peek, entries and append rows")
    args = ap.parse_args(argv)
    judged = args.mb is not None
    if not judged:
        args.mb = QUICK_MB
    if not (math.isfinite(args.mb) and args.mb > 0):  # nan passed "<= 0" and then never ended
        ap.exit(2, f"agent-transcript: bench: --mb takes a number of MiB > 0, not {args.mb!r}\n")
    log = _Log(quiet=False)
    try:
        from .. import Session  # noqa: F401
    except ImportError as e:
        print(f"agent-transcript bench: Session is not available: {e}", file=sys.stderr)
        return 2
    directory = args.dir if args.dir is not None else default_dir()
    t0 = time.perf_counter()
    files = prepare(directory, args.mb, args.seed, log, args.profile)
    log("warming the page cache")
    lines = _warm(files.big)
    _warm(files.small)
    scratch = directory / f"scratch-{os.getpid()}"
    scratch.mkdir(mode=0o700)
    try:
        bench = (SmallBench if args.profile == "small" else Bench)(files, log, scratch)
        bench.run()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = time.perf_counter() - t0 - (files.generated_s or 0.0)
    measured = [r for r in bench.rows if r.ok is not None]
    ok = (all(r.ok for r in measured) or not judged) and not bench.errors
    orjson_version = None
    if bench.orjson:
        import importlib.metadata
        orjson_version = importlib.metadata.version("orjson")
    if args.json:
        print(json.dumps({
            "file": str(files.big), "profile": args.profile, "mb": args.mb, "judged": judged, "seed": args.seed,
            "size": files.size,
            "small_file": str(files.small), "small_size": files.small_size, "lines": lines,
            "generated_s": files.generated_s, "run_s": total,
            "python": platform.python_version(), "orjson": orjson_version, "cpus": os.cpu_count(),
            "measurements": bench.m, "rows": [asdict(r) for r in bench.rows],
            "errors": bench.errors, "ok": ok,
        }, indent=2))
    else:
        print(f"agent-transcript bench: {files.big} ({files.size / MIB:,.1f} MiB, {lines:,} lines, "
              f"seed {args.seed}; {'generated in %.0f s' % files.generated_s if files.generated_s else 'reused'})")
        print(f"python {platform.python_version()}, orjson {orjson_version or 'not installed'}, "
              f"{os.cpu_count()} CPUs; measured in {total:.0f} s, page cache warm, best of N runs")
        print()
        for text in _table(bench.rows):
            print(text)
        for err in bench.errors:
            print(f"error: {err}")
        print()
        print(f"{sum(1 for r in measured if r.ok)}/{len(measured)} targets met"
              + ("" if len(measured) == len(bench.rows) else f", {len(bench.rows) - len(measured)} not measured")
              + ("" if judged else f" (a quick run on {args.mb:g} MiB, not judged: the targets are set for "
                                   "the 1 GiB yardstick, agent-transcript bench --mb 1024)"))
    return 0 if ok else 1
