#!/usr/bin/env bash
# Regenerate docs/img/timeline.png (docs/parallelism.md's timeline of one update: Llama-3 70B on
# 64 DGX H100 nodes, t=8 p=4 d=16, ZeRO-1, 8 micro-batches; needs the `plot` extra), then
# docs/img/ui.png (the README's and docs/ui.md's picture of `mlsysim ui`) from the
# browser test that takes it: GPT-2 on four DGX H100 nodes over 10 Gb Ethernet, 1400x1000.
# The second needs the `ui` and `test` extras and Debian's chromium and chromium-driver.
# Usage (from anywhere): docs/img/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
mlsysim explain Gpt2DataParallelOneNode --set workload=Llama3_70B --set node=DGX_H100 \
  --set fabric=InfiniBand_NDR --set nodes=64 --set mfu=0.73 --set step_time=none --set training_time=none \
  --set "training_tokens=1e12 token" --set per_device_batch=1 --set accumulation_steps=8 \
  --set tensor_parallel=8 --set pipeline_parallel=4 --set zero_stage=1 --set sequence_parallel=1 \
  --set flash_attention=1 --set recompute=selective --set optimizer=adam --set "memory_bandwidth=3.35 TB/s" \
  --set assumptions.overlap=true --plot docs/img/timeline.png | tail -n 1
shots="$(mktemp -d)"
trap 'rm -rf "$shots"' EXIT
MLSYSIM_UI_SCREENSHOTS="$shots" MLSYSIM_REQUIRE_UI=1 python -m pytest -q -p no:randomly \
  "tests/ui/test_browser.py::test_a_url_with_state_shows_the_librarys_figures"
cp "$shots/desktop-1400x1000.png" docs/img/ui.png
echo "wrote docs/img/ui.png"
