#!/usr/bin/env bash
# W8 (the weight gradient of W5's shape) after the NHWC dy packing and the two-pixel tile loop
# of src/ops/conv2d/filter_direct.rs: bench/paired_ab.sh with W7 (served by another kernel)
# as the control row, 150 pairs a build-against-build row, 100 a peer row.
# Usage: bash run.sh NEW_GRADOPS OLD_GRADOPS OUT
set -euo pipefail
exec bash "$(dirname "$0")/../../paired_ab.sh" "$1" "$2" "$3" W8 W7 150 100
