"""``demo [DIR]``: the whole story on a scratch transcript (``agent_transcript.demo``).

The demo imports nothing from the command line: what it prints with (the
style, the check verdict's line, ``show``) is handed to it here.
"""

from __future__ import annotations

import argparse
import sys

from .. import demo
from .check import report_line
from .errors import CliError
from .show import cmd_show, show_arguments
from .style import Style, colour_enabled, terminal_width

__all__ = ["cmd_demo"]


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo [DIR]``: the whole story on a scratch transcript."""
    colour = colour_enabled(args.color, sys.stdout)

    def show(path: str) -> None:
        p = argparse.ArgumentParser(prog="show")
        show_arguments(p)
        cmd_show(p.parse_args([path, "--color", "always" if colour else "never"]))

    terminal = demo.Terminal(style=Style(colour), width=terminal_width(), check_line=report_line, show=show)
    try:
        return demo.run(args.dir, terminal, verbose=args.verbose)
    except demo.DemoError as exc:
        raise CliError(str(exc)) from None
