"""Many transcripts at once: listing a folder, and exporting it as tables.

Lives here: ``list_transcripts``, one ``TranscriptRow`` per file of a
folder read from its first and last lines only (what ``agent-transcript ls``
prints and what a viewer's picker shows), and ``writer_locks``, which says
which files a writer holds without ever touching their lock; and
``export_transcripts``, every transcript of folders as Parquet tables
(``agent-transcript export``; pyarrow, the ``[arrow]`` extra, is imported only
when an export runs); ``to_otlp`` and ``export_otlp``, transcripts as
OpenTelemetry traces (GenAI conventions), written as OTLP/JSON or sent to an
OTLP/HTTP receiver (``otlp_protobuf``, ``send_otlp``: the standard library only).

May import: the standard library, the library's public API (the names in
``agent_transcript.__all__``), ``agent_transcript.inspect`` and
``agent_transcript.formats`` (which tells another tool's file) by their
public names. Never a private module of another package, never ``cli`` (the command
line imports this, not the other way round). Nothing here locks, repairs or
writes a transcript (an export writes only its own folder).
"""

from __future__ import annotations

from .export import FORMATS, MANIFEST, TABLES, ExportError, ExportResult, export_transcripts
from .otlp import OTLP_FORMAT, SEMCONV_VERSION, OtlpExport, export_otlp, to_otlp
from .otlp_wire import ENCODINGS, SendError, otlp_protobuf, send_otlp
from .listing import (
    STATUSES,
    TRANSCRIPT_SUFFIXES,
    TranscriptRow,
    list_transcripts,
    read_row,
    sort_rows,
    writer_locks,
)

__all__ = [
    "TranscriptRow",
    "list_transcripts",
    "read_row",
    "sort_rows",
    "writer_locks",
    "STATUSES",
    "TRANSCRIPT_SUFFIXES",
    "export_transcripts",
    "ExportResult",
    "ExportError",
    "TABLES",
    "FORMATS",
    "MANIFEST",
    "to_otlp",
    "export_otlp",
    "OtlpExport",
    "otlp_protobuf",
    "send_otlp",
    "SendError",
    "OTLP_FORMAT",
    "SEMCONV_VERSION",
    "ENCODINGS",
]
