"""The viewer: a transcript as HTML for a person (``agent-transcript html`` and ``serve``).

Lives here: the records as a page carries them, the file's own lines and
the notes of what replay says of them (``.render``), the page shell and
``html``'s two outputs, one self-contained file or a folder of pages, and
the page's data as JSON (``.page``), the local server with its resume picker (over
``agent_transcript.fleet``), its tail-first pages and live follow
(``.server``), text made safe for what Python writes itself
(``.markup``), and the stylesheet and the scripts shipped as package data
(``viewer.css``; ``render.js``, which draws every card with DOM calls, its
Markdown's links http(s) only; ``viewer.js``, the page's behaviour), inlined
under a Content-Security-Policy that allows nothing else to load.

May import: the standard library, the public API of ``agent_transcript``
(the names in its ``__all__``), the read model ``agent_transcript.inspect``
and ``agent_transcript.fleet`` (the picker's rows).
Never the command line or another front end, nor a private name of another
package.
"""

from __future__ import annotations

from .page import SINGLE_LIMIT, HtmlResult, write_html, write_page_json
from .render import Annotator, anchor
from .server import ViewerServer, make_server

__all__ = ["write_html", "write_page_json", "HtmlResult", "SINGLE_LIMIT", "Annotator", "anchor", "make_server", "ViewerServer"]
