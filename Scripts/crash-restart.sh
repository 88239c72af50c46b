#!/usr/bin/env bash
# Times a start of the SDK after a crash on a store of N visitors (issue 48), as
# `flagship fetch --offline` sees it: open, check, migrate, one visitor looked up and printed.
#
#   Scripts/crash-restart.sh TOOL STORE [VISITORS] [RUNS]
#
# TOOL: a `flagship` binary (a release build). STORE: the store file, made with VISITORS
# visitors (default 1,000,000) when it does not exist (Scripts/scale-store.sh). Each run first
# leaves what a killed process leaves (the session row of a process that is gone) and drops the
# file from the page cache where it can.
# Prints each run's seconds, then the median.
set -euo pipefail
tool=$1 store=$2 visitors=${3:-1000000} runs=${4:-3}

"$(dirname "$0")/scale-store.sh" "$tool" "$store" "$visitors"
visitor=$(sqlite3 "$store" "SELECT visitor_id FROM visitors LIMIT 1")
dead=$(sh -c 'echo $$')   # a process that has ended: its pid names no live process
times=()
for _ in $(seq "$runs"); do
    sqlite3 "$store" "INSERT OR REPLACE INTO sdk_state (key, value, updated_at) VALUES ('store.session.$dead.crash', '0', 0)"
    sync; [ -w /proc/sys/vm/drop_caches ] && echo 1 > /proc/sys/vm/drop_caches || true
    start=$(date +%s.%N)
    "$tool" fetch --env-id scale --api-key scale --visitor-id "$visitor" --db "$store" --offline >/dev/null 2>&1
    end=$(date +%s.%N)
    seconds=$(echo "$end - $start" | bc)
    times+=("$seconds")
    echo "run: $seconds s"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median: %.2f s (%d runs, %s visitors)\n", a[int((NR + 1) / 2)], NR, "'"$visitors"'" }'
