"""The viewer: a transcript as HTML for a person (``agent-transcript html`` and ``serve``).

Lives here: text made safe for a page (:mod:`.markup`: escaping, visible
control characters, a small Markdown whose links are http(s) only), the
renderer of one envelope as one HTML fragment over the read model
(:mod:`.render`), the page shell and ``html``'s two outputs, one
self-contained file or a folder of pages (:mod:`.page`), the local server
with its resume picker and live follow (:mod:`.server`), and the one
stylesheet and one script shipped as package data (``viewer.css``,
``viewer.js``), inlined under a Content-Security-Policy that allows nothing
else to load.

May import: the standard library, the public API of ``agent_transcript``
(the names in its ``__all__``) and the read model ``agent_transcript.inspect``.
Never the command line or another front end, nor a private name of another
package.
"""

from __future__ import annotations

from .page import SINGLE_LIMIT, HtmlResult, write_html
from .render import Renderer, anchor
from .server import ViewerServer, make_server

__all__ = ["write_html", "HtmlResult", "SINGLE_LIMIT", "Renderer", "anchor", "make_server", "ViewerServer"]
