#!/usr/bin/env bash
# Usage: Scripts/test.sh TEST_BUNDLE EXAMPLE_PROGRAM      (`make test`, after `make build`)
#
# Every check of `make test`, on the build with every trait, in jobs that run at once:
#   suite           every other test, its output shown as it runs: the job that sets how long
#                   `make test` takes
#   documentation   the tests that build packages of their own: the documentation's and the
#                   reference's Swift blocks (one snippet package), Getting started as pasted,
#                   the README's shell examples (DocumentationSnippetTests, ReferenceSnippetTests,
#                   HostileReadmeTests)
#   fuzz            each libFuzzer target for 10 s (`make fuzz`)
#   long            once the fuzzing ends, the suite's longest classes (StressTests, 30 s of
#                   sixteen tasks; HostileRowValueTests, every column value through every reading
#                   command; the light tool's build check, the network-fault soak, the corruption
#                   torture, the kill-and-replay test): about 75 s taken off the suite's path
#   tool            the `flagship` tool of the default build, no trait (`make tool`: its own build
#                   directory, .build, and its warnings checked), which the example and the light
#                   tool's check use; built here, beside the tests, rather than before them: the
#                   suite leaves a core idle part of the time, a build does not
#   example         once the tool is built, Examples/HummingbirdServer, as `make build` built it,
#                   against the local server (`flagship serve`)
#   one-thread      once the example ends, the suite's classes again with Swift concurrency's
#                   global executor on one thread (FLAGSHIP_ONE_COOPERATIVE_THREAD=1, installed by
#                   the bundle at load: Tests/FlagshipTests/OneCooperativeThread.swift): what blocks
#                   a thread of the cooperative pool while it waits for other async work hangs
#                   there (LIBDISPATCH_COOPERATIVE_POOL_STRICT does not narrow the pool on Linux)
# The suite alone keeps about one core of two busy, waiting on sockets, processes and timeouts; the
# other jobs fill the rest. Their logs print after the suite's, then a summary; the exit status is
# non-zero when any job failed, and the failures are repeated last.
#
# The test bundle is run directly, not through `swift test`: SwiftPM holds a lock on the build
# folder for as long as its command runs, so two `swift test` would run one after the other.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bundle="${1:?usage: Scripts/test.sh TEST_BUNDLE EXAMPLE_PROGRAM}"
example="${2:?usage: Scripts/test.sh TEST_BUNDLE EXAMPLE_PROGRAM}"
logs="$root/.build-all"
documentation='^FlagshipTests\.(DocumentationSnippetTests|ReferenceSnippetTests|HostileReadmeTests)$'
long='^(FlagshipTests\.(StressTests|NetworkFaultSoakTests|CorruptionTortureTests)|flagshipTests\.(HostileRowValueTests|PostgresNotBuiltInTests|HitDurabilityTests))$'

[ -x "$bundle" ] || { echo "No test bundle at $bundle: run make build"; exit 2; }
# `make build` builds the documentation's programs that import an integration beside the tests
# (FLAGSHIP_EXAMPLE=1, Package.swift): here a missing one is a failure, not a skip.
export FLAGSHIP_REQUIRE_EXAMPLES=1
listed="$("$bundle" --list-tests | grep -E '^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*/')"
classes="$(cut -d/ -f1 <<< "$listed" | sort -u)"
suite_classes="$(grep -Ev "$documentation|$long" <<< "$classes" | paste -sd, -)"
documentation_classes="$(grep -E "$documentation" <<< "$classes" | paste -sd, -)"
long_classes="$(grep -E "$long" <<< "$classes" | paste -sd, -)"
[ -n "$suite_classes" ] && [ -n "$documentation_classes" ] && [ -n "$long_classes" ] || { echo "No tests listed by $bundle"; exit 2; }

# job NAME COMMAND...: runs COMMAND with its output in .build-all/NAME-output.log; writes its exit
# status and seconds to .build-all/NAME.status.
job() {
    local name="$1"; shift
    local start=$SECONDS status=0
    "$@" > "$logs/$name-output.log" 2>&1 || status=$?
    echo "$status $(( SECONDS - start ))" > "$logs/$name.status"
}
rm -f "$logs"/*.status
job documentation "$bundle" "$documentation_classes" &
{ job fuzz make --no-print-directory -C "$root" fuzz; job long "$bundle" "$long_classes"; } &
{ job tool make --no-print-directory -C "$root" tool; job example env FLAGSHIP_EXAMPLE_BIN="$example" "$root/Scripts/example.sh"
  job one-thread env FLAGSHIP_ONE_COOPERATIVE_THREAD=1 "$bundle" "$suite_classes"; } &

start=$SECONDS
"$bundle" "$suite_classes" 2>&1 | tee "$logs/suite-output.log"
echo "${PIPESTATUS[0]} $(( SECONDS - start ))" > "$logs/suite.status"
wait

for name in documentation fuzz long tool example one-thread; do
    echo "== $name (run beside the suite): .build-all/$name-output.log"
    cat "$logs/$name-output.log"
done

failed=0
echo "== make test"
for name in suite documentation fuzz long tool example one-thread; do
    read -r status seconds < "$logs/$name.status" || { status=1; seconds="?"; }
    tests="$(grep -oE 'Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?' "$logs/$name-output.log" | tail -1)"
    if [ "$status" -eq 0 ]; then result=ok; else result="FAILED (exit $status)"; failed=1; fi
    printf "%-14s %-18s %5s s  %s\n" "$name" "$result" "$seconds" "$tests"
done
# Every test the bundle lists ran, in one job or the other.
executed=0
for name in suite documentation long; do
    count="$(grep -oE 'Executed [0-9]+ tests?' "$logs/$name-output.log" | tail -1 | grep -oE '[0-9]+')"
    executed=$(( executed + ${count:-0} ))
done
expected="$(grep -c . <<< "$listed")"
if [ "$executed" -ne "$expected" ]; then
    echo "$executed tests ran, but the bundle lists $expected"; failed=1
else
    echo "$executed tests in all"
fi
if [ "$failed" -ne 0 ]; then
    echo "== The failures, again:"
    for name in suite documentation long one-thread; do
        grep -E ": error: |Test Case .* failed|Fatal error|Crash" "$logs/$name-output.log" | tail -40
    done
    grep -E "FAILED|crash" "$logs/fuzz-output.log" "$logs/example-output.log" | tail -20
    grep -E "error|warning" "$logs/tool-output.log" | tail -20
fi
exit "$failed"
