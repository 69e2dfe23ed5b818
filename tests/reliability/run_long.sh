#!/usr/bin/env bash
# The long reliability run: see run_long.py.
exec python3 "$(dirname "$0")/run_long.py" "$@"
