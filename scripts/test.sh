#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs every test: the C++ suite and the C++ example through
# CTest, the Python suite through pytest. Both run; the exit status is non-zero if either fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

status=0
.venv/bin/ctest --test-dir build --output-on-failure -j2 || status=1
.venv/bin/python -m pytest python_tests -q || status=1
exit $status
