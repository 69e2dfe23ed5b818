"""The process scenario 2 kills: load a transcript, then append from several threads.

``python kill_writer.py PATH INCARNATION THREADS``. Prints ``W <warning>`` for
each load warning, ``R`` once loaded, then ``A <thread> <seq> <id>`` after each
append returns, each line with one ``write(2)`` (so a kill never tears one).
The content of every message is a pure function of (incarnation, thread, seq),
so the parent can tell a garbled or glued line from a good one.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from agent_transcript import Message, Session


def content(incarnation: int, thread: int, seq: int) -> str:
    """The message text for one append: mostly short, now and then over many pages
    (a SIGKILL can stop a multi-page write(2) part way)."""
    tag = f"{incarnation}:{thread}:{seq}:"
    n = (incarnation * 7919 + thread * 104729 + seq * 31) % 499
    if n == 0:
        return tag + "Ω🚀x" * 12_000  # about 96 KB
    return tag + "é日a" * (n % 50)


def main() -> None:
    path, incarnation, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    try:
        session = Session.load(path)
    except Exception as e:  # reported to the parent, which fails the test
        os.write(2, f"load failed: {type(e).__name__}: {e}\n".encode())
        sys.exit(3)
    for warning in session.warnings:
        os.write(1, f"W {warning}\n".encode())
    os.write(1, b"R\n")

    def run(thread: int) -> None:
        seq = 0
        try:
            while True:
                seq += 1
                mid = session.append_message(Message.user(content(incarnation, thread, seq)))
                os.write(1, f"A {thread} {seq} {mid}\n".encode())
                time.sleep(0.002)  # keep the files to a size a restart loads quickly
        except BaseException as e:  # an append must never fail here: tell the parent
            os.write(2, f"append failed: {type(e).__name__}: {e}\n".encode())
            os._exit(4)

    workers = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
