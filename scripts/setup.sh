#!/usr/bin/env bash
# Creates .venv in the repository root and installs benchctl (editable) with its test and ray extras.
# A plain `torch` requirement gives a CUDA build, so CUDA extensions compile and link even without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,ray]'
# The allocators `run --allocator` can preload (Debian packages); without them that option says how to get them.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ls /usr/lib/*/libjemalloc.so.2 >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq libjemalloc2 libtcmalloc-minimal4) >/dev/null 2>&1 \
    || echo "setup: could not install libjemalloc2 / libtcmalloc-minimal4; --allocator will say so" >&2
fi
.venv/bin/benchctl --version
