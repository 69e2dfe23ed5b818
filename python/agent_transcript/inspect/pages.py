"""The core's pages of a transcript, for ``html``'s folder: the walk over its
records a page at a time and the writer of the page files (see
``rust/tools/src/page.rs``).

* ``PageWalk`` ``(index, end, soft_records, hard_records, soft_bytes,
  hard_bytes, big_line, head)``: over the envelope index of a ``Reading``
  (a read-only ``Transcript`` or a ``Peeked``), ``next_page()`` gives ``(start,
  stop, first line, items, odd lines, bytes)`` until None: the page's records
  ``(index, line, type, head)``; the lines it cannot carry as they are ``(line,
  index or None, start, end)`` (a record over ``big_line`` bytes, a damaged
  line); its bytes but for those (``PageBytes``). A page ends at a turn or
  a compaction past the soft limits, at any record past the hard ones.
* ``PageWriter`` ``(depth)``: writes files on a thread of its own, each to
  ``<path>.tmp`` then renamed; ``chunk(path, prefix, page, subs, suffix)`` a
  page's chunk (its bytes with each odd line's replacement, escaped for a
  ``String.raw`` template), ``file(path, pieces)`` a file as it is; ``finish()``
  waits, and raises the ``OSError`` of the first file that failed (its
  ``filename`` the file's path).
"""

from __future__ import annotations

from .._core import PageBytes, PageWalk, PageWriter

__all__ = ["PageBytes", "PageWalk", "PageWriter"]
