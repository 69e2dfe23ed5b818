"""Where the files that belong to a transcript go, and how the front ends open
what they are given: one rule for all of them.

* ``beside``: ``<prefix><name><suffix>`` beside a transcript (its repair, an
  import's temporary file, a page's ``.tmp``), cut and tagged with the name's
  digest where that would be longer than the folder allows.
* ``artifacts_folder``: ``<stem>.artifacts/`` (the same rule for a stem too
  long for the suffix).
* ``open_regular``: a descriptor of a regular file, never blocking on a FIFO
  or acting on a device; ``open_regular_file``, the same as a file object
  that owns it, and ``read_regular_file``, a read of one that closes it
  whatever happens.
* ``Descriptor``: a descriptor held so that a Ctrl-C at any line leaves
  it either open and held or closed, never forgotten.
* ``name_max``: the longest file name a folder's filesystem takes, to
  refuse a name that cannot exist before anything is written.
* ``open_replacement`` and ``replace_with``: a file written whole
  beside its path, then renamed over it; never over a device, FIFO or socket
  (``refuse_to_replace``), never through a symlink left where the new file
  is made.
* ``make_folders``: a folder for what is made from a transcript, ``0700``
  (its missing parents too), whatever the umask.
* ``move_into_place``: a file written whole beside its path, given that
  name only if nothing has it (an import without ``--force``, an archive).
* ``open_stored_artifact``: a stored artifact's descriptor, or None when
  what is there is no stored artifact (a link, a FIFO, a device, nothing).
"""

from __future__ import annotations

from .._storage import (Descriptor, beside, make_folders, move_into_place, name_max, open_regular, open_regular_file,
                        open_replacement, read_regular_file, refuse_to_replace, replace_with)
from ..artifacts import artifacts_folder
from ..artifacts import open_stored as open_stored_artifact

__all__ = ["Descriptor", "artifacts_folder", "beside", "make_folders", "move_into_place", "name_max", "open_regular",
           "open_regular_file", "open_replacement", "open_stored_artifact", "read_regular_file",
           "refuse_to_replace", "replace_with"]
