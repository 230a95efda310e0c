#!/usr/bin/env bash
# Regenerate docs/img/ui.png (the README's and docs/ui.md's picture of `mlsysim ui`) from the
# browser test that takes it: GPT-2 on four DGX H100 nodes over 10 Gb Ethernet, 1400x1000.
# Needs the `ui` and `test` extras and Debian's chromium and chromium-driver.
# Usage (from anywhere): docs/img/regenerate.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
shots="$(mktemp -d)"
trap 'rm -rf "$shots"' EXIT
MLSYSIM_UI_SCREENSHOTS="$shots" MLSYSIM_REQUIRE_UI=1 python -m pytest -q -p no:randomly \
  "tests/ui/test_browser.py::test_a_url_with_state_shows_the_librarys_figures"
cp "$shots/desktop-1400x1000.png" docs/img/ui.png
echo "wrote docs/img/ui.png"
