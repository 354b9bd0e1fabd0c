#!/usr/bin/env bash
# Every GPU figure of benchmarks/README.md ("The CUDA kernels at the GPU's floor") and the self-test, in
# one run that can be stopped and started again: a part that finished is skipped the next time (on the
# same machine), and the self-test resumes after its last passed step.
#
#   BUDGET=540 bash benchmarks/gpu_checks.sh     # seconds this run may take; results under $OUT
#   VERSIONS="0 1 2 3 4 5 6 7 8 9 10" BUDGET=540 bash benchmarks/gpu_checks.sh   # A/B these backward versions
#
# Parts, most wanted first: build, calibration, each operator's CUDA and Triton kernels at the seed's largest
# size (eager, then as CUDA-graph replays: eager, lstm_cell's, grid_sample's and naflex's backward passes are
# host-bound), the hoconv2d A/B of its backward versions (the checkout last; about 100 s, its own CUDA events
# and its own check of every version against v0), the self-test (about 9 minutes on an H100; a verdict is
# committed for the H100 already), then ncu of the backward versions. Whatever ran, floor.md comes back with
# the table of those kernels against the calibrated floor (floor_table.py).
#
# A GPU machine that reaches no network gets the wheels it lacks from .whl/ (not in git), made beforehand
# where PyPI is at hand:  pip download py-spy ruptures --only-binary=:all: --python-version 3.12 --no-deps -d .whl
export PYTHONUNBUFFERED=1 BENCHCTL_SETTLE=0 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-$(nproc)}
OUT=${OUT:-results/gpu}; G=${WORK:-/tmp/gpu}; mkdir -p $OUT $G; START=$(date +%s); BUDGET=${BUDGET:-540}
PY=${PYTHON:-python3}
# The scripts run below as files (floor_table.py, the A/B bench) import benchctl, which such a machine has not installed.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl > /dev/null 2>&1; then
  [ -d /tmp/site ] || $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PYTHONPATH PATH=/tmp/site/bin:$PATH
fi
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
part() {  # part NAME CAP COMMAND...: at most CAP seconds, and never past the budget
  local name=$1 cap=$2; shift 2
  [ -e $G/done.$name ] && return 0
  local l=$(left); local t=$(( l - 12 < cap ? l - 12 : cap ))
  if [ $t -lt 25 ]; then echo "== $name: skipped, $l s left"; return 0; fi
  echo "== $name (cap $t s, $l s left)"
  timeout $t "$@" > $G/$name.txt 2>&1; local rc=$?
  echo "rc=$rc after $(( $(date +%s) - START )) s" >> $G/$name.txt
  [ $rc -eq 0 ] && touch $G/done.$name
  tail -${TAILN:-14} $G/$name.txt
}
# At most 8 files come back from a device call: the verdict, and one archive of the logs and runs (no builds,
# no flame graphs or traces).
pack() { cp $G/st/verdict.md $OUT/ 2>/dev/null
         $PY benchmarks/floor_table.py $G/seed > $OUT/floor.md 2>&1
         tar czf $OUT/gpu.tgz --exclude='*.svg' --exclude='trace.json' --exclude='speedscope.json' --exclude='*.so' \
           --exclude='*.o' --exclude='build' -C $G . 2>/dev/null; }
trap pack EXIT
V=""
# The backward versions of benchmarks/hoconv2d_variants; by default v6 (the kernel last measured, 0.355 ms
# at B=64 on an H100) and the three not yet measured, against the checkout (its math in hoconv2d_tile.h).
for n in ${VERSIONS:-6 8 9 10}; do
  d=$G/b$n; V="$V $d"; mkdir -p $d
  cp extensions/hoconv2d/hoconv2d.h extensions/hoconv2d/hoconv2d_checks.h extensions/common/benchctl_hd.h $d
  (echo "#define VARIANT $n"; cat benchmarks/hoconv2d_variants/hoconv2d_backward_cuda.cu) > $d/hoconv2d_cuda.cu
done
# The checkout with its forward capped at 48 registers for 5 blocks an SM (uncapped: 56, 4 blocks; no spill
# either way at k=5): its forward against the others', which are all the uncapped one.
d=$G/f5; V="$V $d"; mkdir -p $d; cp extensions/hoconv2d/*.h extensions/common/benchctl_hd.h $d
(echo "#define HOCONV2D_FORWARD_BLOCKS 5"; cat extensions/hoconv2d/hoconv2d_cuda.cu) > $d/hoconv2d_cuda.cu
if [ ! -e $G/info.txt ]; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu --format=csv
    $PY -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"; } > $G/info.txt 2>&1
  ($PY -m benchctl build --cuda > $G/build.txt 2>&1) &
  ($PY benchmarks/hoconv2d_cuda_ab_bench.py $V --own --build-only > $G/abbuild.txt 2>&1) &
  wait; echo "built after $(( $(date +%s) - START )) s" >> $G/info.txt
fi
cat $G/info.txt
M="--min-time 0.3 --max-time 1"
# The GPU's peaks alone, which the kernels' floors are held to: the CPU's as well (a copy at every size between its
# cache levels, in six windows: 121 s on a 2-core VM) ran past this part's cap, and a stopped calibration stores nothing.
TAILN=12 part calibrate 80 $PY -c "from benchctl.measure.calibrate import calibrate; c = calibrate(['cuda'])['cuda']; print(round(c['gbps']), 'GB/s copy; GFLOP/s', c['gflops_by_dtype'])"
# The implementations timed and the seed's largest size of each operator (configs/seed-*.toml; hoconv2d's
# B=64 is the one its issue names).
SEED=("cuda,triton,triton-channels hoconv2d --target filter --batch-sizes 64"
      "cuda,triton naflex_posembed --batch-sizes 512" "cuda,triton lstm_cell --param H=1024 --batch-sizes 1024"
      "cuda,triton grid_sample --param image_size=4096")
for mode in eager cuda-graph; do
  for seed in "${SEED[@]}"; do
    op=${seed#* }
    part $mode-${op%% *} 90 $PY -m benchctl run ${seed%% *} gpu --op $op $M --out $G/seed \
      $([ $mode = eager ] || echo --cuda-graph)
  done
done
TAILN=40 part ab 150 $PY benchmarks/hoconv2d_cuda_ab_bench.py $V --own --rounds 9
TAILN=20 part selftest 900 $PY -m benchctl selftest --out $G/st --step-timeout 240 --resume
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] && TAILN=30 part ncu 70 $NCU --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
  -k "regex:grad_wt|per_pixel|backward_k|forward_k" -c 6 $PY benchmarks/hoconv2d_cuda_ab_bench.py $V --own --once 64
echo "== end after $(( $(date +%s) - START )) s"
