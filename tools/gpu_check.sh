#!/usr/bin/env bash
# Issue 23's checklist on a lent GPU machine, in one call (the device tool; its python3 holds torch, numba-cuda,
# transformers, pytest-benchmark). Builds in place, then each step in priority order under a shared deadline,
# so a slow step cuts the later ones short instead of losing the whole batch. Each step's log goes to
# /tmp/gpu-logs; check.log (every step's tail) and the eight files the device tool brings back go to $OUT
# (or ./gpu-out).
#   [STEPS="build tests ..."] [TURBOMETRICS_COMMIT=abc1234] bash tools/gpu_check.sh [seconds, default 540]
# (TURBOMETRICS_COMMIT: the commit the reports name; it wins over the copy's .git, which can be stale)
# On the 2026-11 image numba-cuda 0.30.4 cannot lower kernels with its NumPy 2.5: carry a NumPy 2.4 wheel for
# Python 3.12 (the device tool's README: .whl, pip install --target) and put it first on PYTHONPATH (kept here).
# Wheels carried in .whl (numpy 2.4, lm-eval, cut-cross-entropy, liger-kernel: see the tools' docstrings) are
# installed into /tmp/site first and put ahead on PYTHONPATH, when .whl holds any and /tmp/site is not already
# on PYTHONPATH (the device tool's README line run before this script). `bash tools/gpu_wheels.sh` fetches all four.
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
else
  echo "=== wheels: none carried (.whl is git-ignored: name it in the call's carry)" | tee -a "$log"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TURBOMETRICS_DATA="${TURBOMETRICS_DATA:-}"

step() {  # step NAME CAP COMMAND...: run with min(CAP, time left) seconds, log to check.log and NAME.log
  local name=$1 cap=$2; shift 2
  [[ -n "${STEPS:-}" && " $STEPS " != *" $name "* ]] && return  # STEPS="build tests ...": only those
  local left=$(( end - $(date +%s) - 5 ))
  (( left < cap )) && cap=$left
  if (( cap < 10 )); then echo "=== $name: skipped (out of time)" | tee -a "$log"; return; fi
  local t0=$(date +%s)
  # SIGINT first: pytest prints its summary so far, a script its traceback (SIGKILL 10 s later)
  timeout -s INT -k 10 "$cap" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s (cap $cap s)" | tee -a "$log"
  grep -v -e "NumbaPerformanceWarning" -e "warn(errors" "$logs/$name.log" | tail -n 25 >> "$log"
  # into $OUT as each step ends, so that a call cut short still brings back what ran (eight files at most)
  case " tests scale ncu " in *" $name "*) cp "$logs/$name.log" "$out/" ;; esac
  case " update_loop head_anchors overhead first_call parity variants racecheck memcheck lm_eval " in
    *" $name "*) { echo "=== $name"; tail -n 150 "$logs/$name.log"; } >> "$out/misc.log" ;;
  esac
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c "import sys, torch, numba, numba_cuda, numpy; print(sys.version.split()[0], 'torch', torch.__version__,
'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'numpy', numpy.__version__)"
  # TURBOMETRICS_COMMIT first: the device's copy of the tree can carry a stale .git (its HEAD an older commit)
  if [[ -n "${TURBOMETRICS_COMMIT:-}" ]]; then echo "commit $TURBOMETRICS_COMMIT (TURBOMETRICS_COMMIT)"
  else git log -1 --format='commit %h %s' 2>/dev/null || echo "commit unknown (no git here)"; fi
  nproc; which ncu compute-sanitizer; } >> "$log" 2>&1
step build 150 python3 setup.py -q build_ext --inplace
# a numba-cuda that cannot launch here (the NumPy 2.5 of the image without the carried 2.4) fails every later
# step: say so in seconds, on stdout, and stop
if [[ -z "${STEPS:-}" || " $STEPS " == *" tests "* ]] && ! python3 -c "
import numpy as np; from numba import cuda
k = cuda.jit(lambda a: None); a = cuda.to_device(np.zeros(1)); k[1, 1](a); cuda.synchronize()" > "$logs/preflight.log" 2>&1
then
  { echo "=== preflight: numba-cuda cannot launch a kernel (numpy $(python3 -c 'import numpy; print(numpy.__version__)'))"
    tail -n 15 "$logs/preflight.log"; } | tee -a "$log"
  exit 3
fi
step tests 150 env TURBOMETRICS_GPU_TESTS=1 python3 -m pytest tests/gpu -q -p no:cacheprovider -n 8
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
  -k regex:'nll_rows|nll_tally|topk_rows|rank_rows|rank_tally|fold_rows|ngram_matches|lcs_pairs' --launch-count 12 \
  python3 tools/gpu_scale.py profile
step racecheck 80 compute-sanitizer --tool racecheck --error-exitcode 99 env TURBOMETRICS_GPU_TESTS=1 \
  python3 -m pytest tests/gpu -q -p no:cacheprovider -n 0 -x -k 'token_id_bleu_equals or lcs_lengths or shared_memory or topk_exact or tally or exp_table or (ranks_exact and sklearn)'
step memcheck 90 compute-sanitizer --tool memcheck --error-exitcode 99 env TURBOMETRICS_GPU_TESTS=1 \
  python3 -m pytest tests/gpu -q -p no:cacheprovider -n 0 -x
step host 45 python3 tools/gpu_scale.py host
python3 benchmarks/report.py --json "$out/bench.json" > "$logs/bench_report.txt" 2>&1 || true
tail -n 60 "$logs/bench_report.txt" >> "$log"
[ -f "$logs/bench_report.txt" ] && cp "$logs/bench_report.txt" "$out/"
[ -f "$logs/host.log" ] && tail -c 60000 "$logs/host.log" > "$out/host.log"
# the verdicts on stdout too (the device tool's output tail): each tool's PASS/FAIL and must-show lines
grep -hE "^(PASS|FAIL|must-show|SUMMARY|verdict)|[0-9]+ (passed|failed)" "$logs"/*.log 2>/dev/null | tail -n 60
