#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then converts two models to convx, checks them against aten, runs
# one from C++ and prints timings (examples/demo.py).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
.venv/bin/python examples/demo.py
