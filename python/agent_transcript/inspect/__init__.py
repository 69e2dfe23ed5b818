"""The read model: what a transcript file says, as typed plain data, for every front end.

Lives here: reading a file without opening it as a session (``.reader``:
``read``, ``Reading``, the tail check, the replay's history as ``Later``,
``CompactionEffect``, ``RewindEffect``, ``LiveMessage``), the check verdict (``.check``:
``CheckReport``, ``check_path``), a listing's first and last lines of
many files at once (``.ends``: ``read_ends``), the counts and sizes (``.stats``:
``Stats``, ``compute_stats``), the tokens a run used (``.tokens``:
``read_usage``, ``usage_of``, ``token_totals``), what a payload's values say as text
(``.values``), why a named file cannot be read (``.files``) and a
file's rows as columns for an export (``.columns``), ``follow_file``
(``Session.follow`` that also tells when it starts the file again: a
truncation, a rotation; ``same_prefix``, how it tells a repair's swap from a
rotation; ``ReadEdges``, how it tells a file rewritten in place from one that
grew), and where the files
that belong to a transcript go (``.paths``: ``beside``, ``artifacts_folder``,
``open_regular``). Every
verdict and replayed state is the core's, from the code load itself runs.
Nothing here prints, writes, locks or repairs; ``.sources`` (the core's
conversion of another tool's file, for ``formats``) writes only to a
descriptor its caller gives.

May import: the standard library and the library modules of
``agent_transcript`` (including its private ``_core``, whose read-only
accessors this wraps). Never a front end (``cli``, ``demo``, ``bench``, ...).
"""

from __future__ import annotations

from .check import CheckReport, check_path, check_report
from .columns import ColumnBatch, ColumnData, FileColumns, status_of
from .ends import Ends, read_ends
from ..follow import GrowingFile, ReadEdges, follow as follow_file, same_prefix
from .files import Unreadable, describe_os_error, os_error_reason, require_file, walk_transcripts
from .reader import CompactionEffect, Later, LiveMessage, Reading, Refusal, RewindEffect, Tail, excerpt, open_file, read, tail
from .stats import (
    ArtifactStats,
    CompactionStats,
    ElisionStats,
    MessageCounts,
    PendingStats,
    RewindStats,
    Stats,
    ToolStats,
    TypeTotal,
    compute_stats,
)
from .values import ToolCall, compact, content_size, content_text, tool_call_parts

__all__ = [
    "follow_file",
    "GrowingFile",
    "same_prefix",
    "ReadEdges",
    "Reading",
    "read",
    "excerpt",
    "open_file",
    "tail",
    "Tail",
    "Refusal",
    "Later",
    "CompactionEffect",
    "RewindEffect",
    "LiveMessage",
    "CheckReport",
    "check_report",
    "check_path",
    "Stats",
    "TypeTotal",
    "MessageCounts",
    "CompactionStats",
    "ElisionStats",
    "RewindStats",
    "ToolStats",
    "PendingStats",
    "ArtifactStats",
    "compute_stats",
    "Unreadable",
    "require_file",
    "os_error_reason",
    "describe_os_error",
    "walk_transcripts",
    "ToolCall",
    "compact",
    "content_text",
    "content_size",
    "tool_call_parts",
    "ColumnBatch",
    "ColumnData",
    "FileColumns",
    "status_of",
    "Ends",
    "read_ends",
]
