#!/bin/sh
# Runs a stand-in tool written in TypeScript: run-fake.sh <entry.ts> [tool arguments...]
#
# Through tsx every invocation would spend ~0.5 s (more under load) compiling before it speaks,
# longer than the real tools and long enough to make the probe tests race their own deadlines.
# So the entry is bundled once with esbuild (a dependency of tsx and vitest) into a cache keyed by
# this checkout, rebuilt when any source it may include is newer, and then run by plain node.
set -eu
entry=$(readlink -f "$1")
shift
fakes=$(dirname "$(readlink -f "$0")")
root=$(cd "$fakes/../../.." && pwd)
cache="${TMPDIR:-/tmp}/hilbench-fakes-$(id -u)/$(printf '%s' "$root" | cksum | cut -d ' ' -f 1)"
out="$cache/$(basename "$entry" .ts).mjs"
if [ ! -f "$out" ] || [ -n "$(find "$root/test/fakes/openocd" "$root/test/fakes/probe-rs" "$root/core" -name '*.ts' -newer "$out" 2>/dev/null | head -n 1)" ]; then
  mkdir -p "$cache"
  # Build beside the target and rename: concurrent invocations never run a half-written bundle.
  tmp="$cache/.build-$$.mjs"
  "$root/node_modules/.bin/esbuild" "$entry" --bundle --platform=node --format=esm --log-level=warning --outfile="$tmp"
  mv -f "$tmp" "$out"
fi
HILBENCH_FAKE_FIRMWARE="$fakes/fake-firmware.mjs" exec node "$out" "$@"
