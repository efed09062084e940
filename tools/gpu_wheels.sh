#!/usr/bin/env bash
# The wheels a GPU run carries to the device machine (its image, 2026-11: Python 3.12, torch 2.11, no lm-eval,
# no anchors, and a NumPy 2.5 that numba-cuda 0.30.4 cannot lower kernels with), into .whl (git-ignored):
#   bash tools/gpu_wheels.sh      # then the device tool's run with carry: [".whl"]; tools/gpu_check.sh installs them
set -euo pipefail
cd "$(dirname "$0")/.."
py=(--only-binary=:all: --python-version 3.12 --implementation cp
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps "${py[@]}" -d .whl numpy==2.4.6 lm-eval==0.4.13 cut-cross-entropy==25.1.1 \
  liger-kernel==0.8.5
ls -l .whl
