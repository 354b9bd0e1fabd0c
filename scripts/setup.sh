#!/usr/bin/env bash
# Creates .venv in the repository root and installs benchctl (editable) with its test and ray extras.
# A plain `torch` requirement gives a CUDA build, so CUDA extensions compile and link even without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,ray]'
.venv/bin/benchctl --version
