"""``python -m agent_transcript``: the command line (see ``agent_transcript.cli``)."""

import sys

from .cli import main

sys.exit(main())
