#!/usr/bin/env bash
# Issue 23's checklist on a lent GPU machine, in one call (the device tool; its python3 holds torch, numba-cuda,
# transformers, pytest-benchmark). Builds in place, then each step in priority order under a shared deadline,
# so a slow step cuts the later ones short instead of losing the whole batch. Each step's log goes to
# /tmp/gpu-logs; check.log (every step's tail) and the eight files the device tool brings back go to $OUT
# (or ./gpu-out).
#   [STEPS="build tests ..."] bash tools/gpu_check.sh [seconds, default 540]
# On the 2026-11 image numba-cuda 0.30.4 cannot lower kernels with its NumPy 2.5: carry a NumPy 2.4 wheel for
# Python 3.12 (the device tool's README: .whl, pip install --target) and put it first on PYTHONPATH (kept here).
# Wheels carried in .whl (numpy 2.4, lm-eval, cut-cross-entropy, liger-kernel: see the tools' docstrings) are
# installed into /tmp/site first and put ahead on PYTHONPATH, when .whl holds any and /tmp/site is not already
# on PYTHONPATH (the device tool's README line run before this script).
set -u
out="${OUT:-gpu-out}"; logs=/tmp/gpu-logs; mkdir -p "$out" "$logs"
end=$(( $(date +%s) + ${1:-540} ))
log="$out/check.log"
if [[ ":${PYTHONPATH:-}:" == *":/tmp/site:"* ]]; then
  echo "=== wheels: /tmp/site already on PYTHONPATH" >> "$log"
elif compgen -G ".whl/*.whl" > /dev/null; then
  if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      > "$logs/wheels.log" 2>&1; then
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
    echo "=== wheels: installed into /tmp/site: $(cd .whl && ls *.whl | tr '\n' ' ')" >> "$log"
  else
    { echo "=== wheels: pip install failed"; tail -n 20 "$logs/wheels.log"; } >> "$log"
  fi
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TURBOMETRICS_DATA="${TURBOMETRICS_DATA:-}"

step() {  # step NAME CAP COMMAND...: run with min(CAP, time left) seconds, log to check.log and NAME.log
  local name=$1 cap=$2; shift 2
  [[ -n "${STEPS:-}" && " $STEPS " != *" $name "* ]] && return  # STEPS="build tests ...": only those
  local left=$(( end - $(date +%s) - 5 ))
  (( left < cap )) && cap=$left
  if (( cap < 10 )); then echo "=== $name: skipped (out of time)" | tee -a "$log"; return; fi
  local t0=$(date +%s)
  timeout -k 5 "$cap" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s (cap $cap s)" | tee -a "$log"
  grep -v -e "NumbaPerformanceWarning" -e "warn(errors" "$logs/$name.log" | tail -n 25 >> "$log"
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c "import sys, torch, numba, numba_cuda, numpy; print(sys.version.split()[0], 'torch', torch.__version__,
'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'numpy', numpy.__version__)"
  git log -1 --format='commit %h %s' 2>/dev/null; nproc; which ncu compute-sanitizer; } >> "$log" 2>&1
step build 150 python3 setup.py -q build_ext --inplace
step tests 120 env TURBOMETRICS_GPU_TESTS=1 python3 -m pytest tests/gpu -q -p no:cacheprovider -n 8
step lm_eval 120 python3 tools/gpu_lm_eval.py 32 2048  # issue 40 (its last point): needs the lm-eval 0.4.13 wheel carried (its docstring)
step update_loop 60 python3 tools/gpu_update_loop.py  # issue 41: no stall in Perplexity.update
step head_anchors 90 python3 tools/gpu_head_anchors.py  # issue 41: the fused head vs CCE, Liger, PyTorch
step overhead 60 python3 tools/gpu_overhead.py
step first_call 90 python3 tools/gpu_first_call.py  # a new process's first calls: kernel cache empty, filled, off
step parity 100 python3 tools/gpu_parity.py
step bench 150 python3 -m pytest benchmarks/test_bench_gpu.py --benchmark-only -q -p no:cacheprovider \
  --benchmark-json="$out/bench.json" --benchmark-columns=median,min,max --benchmark-sort=name
step scale 90 python3 tools/gpu_scale.py tokens memory hf
step variants 40 python3 tools/gpu_scale.py variants
step ncu 90 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
  -k regex:'nll_rows|topk_rows|rank_rows|fold_rows|ngram_matches|lcs_pairs' --launch-count 12 \
  python3 tools/gpu_scale.py profile
step racecheck 80 compute-sanitizer --tool racecheck --error-exitcode 99 env TURBOMETRICS_GPU_TESTS=1 \
  python3 -m pytest tests/gpu -q -p no:cacheprovider -n 0 -x -k 'token_id_bleu_equals or lcs_lengths or shared_memory or topk_exact'
step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 99 env TURBOMETRICS_GPU_TESTS=1 \
  python3 -m pytest tests/gpu -q -p no:cacheprovider -n 0 -x
step host 45 python3 tools/gpu_scale.py host
python3 benchmarks/report.py --json "$out/bench.json" > "$logs/bench_report.txt" 2>&1 || true
tail -n 60 "$logs/bench_report.txt" >> "$log"
for f in tests scale ncu; do [ -f "$logs/$f.log" ] && cp "$logs/$f.log" "$out/"; done
for f in update_loop head_anchors overhead first_call parity variants racecheck memcheck lm_eval; do
  [ -f "$logs/$f.log" ] && { echo "=== $f"; tail -n 150 "$logs/$f.log"; }
done > "$out/misc.log"  # the device tool brings back eight files
[ -f "$logs/bench_report.txt" ] && cp "$logs/bench_report.txt" "$out/"
[ -f "$logs/host.log" ] && tail -c 60000 "$logs/host.log" > "$out/host.log"
