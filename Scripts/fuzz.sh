#!/usr/bin/env bash
# Usage: Scripts/fuzz.sh SECONDS [target...]
#
# Builds the libFuzzer targets of Fuzz/ (address sanitizer, coverage instrumentation) and runs each
# named target (all by default) for SECONDS on a copy of its seed corpus Fuzz/Corpus/<target>/, in a
# temporary directory: the committed corpus never grows by itself. Prints, per target, libFuzzer's
# run count and whether it crashed, writes the same table to Fuzz/.build/fuzz-report.txt, and exits
# 1 when a target crashed, naming the input that did (kept under Fuzz/.build/crashes/<target>/).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$root/Fuzz"
swift="${SWIFT:-swift}"
seconds="${1:?usage: Scripts/fuzz.sh SECONDS [target...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(FuzzDecisionResponse FuzzBucketing FuzzVisitorCacheDocument FuzzHitCacheDocument FuzzValidation FuzzCompiledBucketing FuzzIndexLeaves)
fi

# `--sanitize=fuzzer` is not used: it would link libFuzzer's `main` into the main package's build
# tool too (see Fuzz/Package.swift). These flags are what it gives the code under test.
coverage="edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table"
build=("$swift" build --package-path "$fuzz" --scratch-path "$fuzz/.build" -c debug
       --sanitize=address -Xswiftc "-sanitize-coverage=$coverage")
echo "Building the fuzz targets..."
start=$(date +%s)
# (The linker's "Cannot export local symbol '__asan_…'" lines, hundreds of them, are left out:
# they come from the sanitizer's runtime, not from our code.)
"${build[@]}" 2>&1 | grep -E "error|warning: |Compiling|Build complete" | grep -v "^\[" \
    | grep -v "Cannot export local symbol '__asan" || true
"${build[@]}" >/dev/null 2>&1 || { echo "The fuzz targets do not build (run: ${build[*]})"; exit 2; }
echo "Built in $(( $(date +%s) - start )) s."
bin="$("${build[@]}" --show-bin-path)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
report="$fuzz/.build/fuzz-report.txt"
printf "%-26s %12s %8s  %s\n" TARGET RUNS SECONDS RESULT > "$report"
crashed=0
for target in "${targets[@]}"; do
    [ -x "$bin/$target" ] || { echo "unknown fuzz target: $target"; exit 2; }
    corpus="$work/$target"
    artifacts="$fuzz/.build/crashes/$target/"
    mkdir -p "$corpus" "$artifacts"
    cp "$fuzz/Corpus/$target/"* "$corpus/"
    echo "== $target: $seconds s"
    log="$work/$target.log"
    status=0
    # No Swift backtracer: libFuzzer reports the crash and writes the input.
    SWIFT_BACKTRACE=enable=no "$bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" >"$log" 2>&1 || status=$?
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    [ -n "$runs" ] || runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)"
    [ -n "$runs" ] || runs="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
    input="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)"
    if [ "$status" -eq 0 ]; then
        result="ok"
    else
        crashed=1
        result="CRASHED (exit $status)${input:+: $input}"
        grep -E "Fatal error|ERROR: (AddressSanitizer|libFuzzer)|SUMMARY" "$log" | head -5 | sed 's/^/    /'
    fi
    sed -n 's/^\(Done [0-9]* runs.*\)$/    \1/p' "$log"
    printf "%-26s %12s %8s  %s\n" "$target" "${runs:-?}" "$seconds" "$result" | tee -a "$report"
done
echo
cat "$report"
echo "(report: $report)"
exit $crashed
