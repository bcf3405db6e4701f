#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time each (default 30 s), one at a
# time, and prints each target's executions and coverage. Needs the nightly toolchain and
# cargo-fuzz (`cargo install --locked cargo-fuzz`); without them it says so and exits 0.
#
#   scripts/fuzz.sh [seconds per target] [target...]
#
# Seeds come from fuzz/make_seeds.py (tests/data and small valid payloads); inputs libFuzzer
# finds accumulate in fuzz/corpus/<target>/ (not checked in), crashes in
# fuzz/artifacts/<target>/. docs/testing.md has longer runs and how to replay a crash.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-30}"
shift || true
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: skipped: no nightly/cargo-fuzz (rustup toolchain install nightly; cargo install --locked cargo-fuzz)"
  exit 0
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi

python3 fuzz/make_seeds.py
# One build for every target, with the flags the runs use (so `run` does not rebuild).
flags=(-O --debug-assertions)
(cd fuzz && cargo +nightly fuzz build "${flags[@]}")

summary=()
for t in "${targets[@]}"; do
  log="fuzz/target/fuzz-$t.log"
  echo "== fuzz $t (${secs} s)"
  extra=()
  asan="${ASAN_OPTIONS:-}"
  # linear creates and drops rayon thread pools whose threads exit asynchronously: libFuzzer
  # would run LeakSanitizer's scan after nearly every input (5x slower), and the scan at
  # exit reports the spawn records of pool threads still shutting down. Leak checking is
  # off for this target only; ASan's memory checks stay on.
  if [ "$t" = linear ]; then
    extra=(-detect_leaks=0)
    asan="${asan:+$asan:}detect_leaks=0"
  fi
  if ! (cd fuzz && ASAN_OPTIONS="$asan" cargo +nightly fuzz run "${flags[@]}" "$t" -- \
        -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 "${extra[@]}") >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t FAILED (input under fuzz/artifacts/$t/; full log $log)"
    exit 1
  fi
  # libFuzzer's last status line (#runs DONE cov: ft: corp:) and its final stats.
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  rate=$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}' || true)
  line="$t: ${done_line:-no DONE line} (${rate:-?} exec/s, ${secs} s)"
  echo "   $line"
  summary+=("$line")
done
echo "== fuzz summary"
printf '   %s\n' "${summary[@]}"
