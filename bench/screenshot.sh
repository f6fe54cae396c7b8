#!/usr/bin/env bash
# Render a `liteload bench all --html` report in headless Chromium and save a PNG, to see
# that the page and its charts draw. Installs Debian's chromium when it is missing (root).
#
#   [SCALE=0.75] bench/screenshot.sh REPORT.html OUT.png [WIDTH HEIGHT]
set -euo pipefail
html=$(realpath "$1"); out=$(realpath -m "$2"); w=${3:-1200}; h=${4:-2400}
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
    else
        echo "chromium is not installed (apt-get install chromium)" >&2; exit 1
    fi
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size="$w,$h" \
    --force-device-scale-factor="${SCALE:-1}" \
    --screenshot="$out" "file://$html" 2>/dev/null
test -s "$out" && echo "wrote $out"
