#!/usr/bin/env bash
# Runs a command beside a busy neighbour: a loop compiling hoconv2d's C++ source with g++ -O2 (about one
# core), as a developer's own build beside a sweep. With ON_S and OFF_S it comes and goes (ON_S seconds of
# compiling, OFF_S seconds of nothing). benchmarks/README.md, "Beside a busy neighbour", has what it showed.
#   bash benchmarks/busy_neighbour.sh .venv/bin/benchctl run py,cpp cpu --op lstm_cell --quick --out /tmp/busy
#   ON_S=5 OFF_S=5 bash benchmarks/busy_neighbour.sh .venv/bin/benchctl run py,cpp cpu --op lstm_cell --out /tmp/b
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
TORCH=$($PY -c "from torch.utils.cpp_extension import include_paths as p; print(' '.join('-I' + i for i in p()))" \
  2>/dev/null)
PYINC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
export CXXFLAGS="-O2 -std=c++17 $TORCH -I$PYINC -Iextensions/common -Iextensions/hoconv2d" ON_S="${ON_S:-0}" \
  OFF_S="${OFF_S:-0}" OUT=$(mktemp -d)
cp extensions/hoconv2d/hoconv2d_cpu.cpp "$OUT/neighbour.cpp"
# its own process group (setsid), so that the loop and the compiler it runs end together
setsid bash -c '
  compile() { while true; do g++ $CXXFLAGS -c "$OUT/neighbour.cpp" -o "$OUT/neighbour.o" 2>/dev/null; done; }
  if [ "$ON_S" -gt 0 ] && [ "$OFF_S" -gt 0 ]; then
    while true; do compile & sleep "$ON_S"; kill $!; pkill -f "$OUT/neighbour"; sleep "$OFF_S"; done
  else
    compile
  fi' &
NEIGHBOUR=$!
trap 'kill -- -"$NEIGHBOUR" 2>/dev/null; rm -rf "$OUT"' EXIT
sleep 2
"$@"
