#!/usr/bin/env bash
# The scale measurements of issue 48 (`make scale`): stores of growing size, each figure measured
# on each, then a table with the growth from one size to the next (a cost flat in the store's
# size grows 1.0× while the store grows 10×).
#
#   Scripts/scale.sh [VISITORS...]      (default: 100000 1000000; add 10000000 for the 8 GB store)
#
# Each store is made once with Scripts/scale-store.sh in $SCALE_DIR (default /tmp/flagship-scale)
# and kept for the next run; every measure that writes works on a copy. Measured, per size:
#   - the start after a crash (`flagship fetch --offline` after a killed process's session row,
#     the page cache dropped when the script may: Scripts/crash-restart.sh, median of 3);
#   - `flagship visitors` and `flagship db inspect` as they run by default: time and peak RSS;
#   - `flagship db prune` of the least recently seen tenth, by retention, then by budget
#     (`--max-visitors`): visitors a second, milliseconds per visitor, the longest batch's hold
#     of the write lock;
#   - with SCALE_SOAK=1, the soak against a copy of the store at $SCALE_RATE visitors/s (1,800 by
#     default, 80 % new) for 120 s, the SDK's retention set so that its first prune (a minute in)
#     deletes a tenth of the store under the load: hits evicted, lost or shed, the lowest and highest
#     p99 of the 10 s samples (a visitor's fetch, an awaited hit), and the prune's line.
#   - (once, whatever the sizes) a start on a stored bucketing file of 100, 6,000 and 10,000 random
#     campaigns ($SCALE_CAMPAIGNS), from its compiled form and from its JSON, and `flagship eval`.
# A release build of the tools first. Prints Markdown tables on stdout, progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000)
dir=${SCALE_DIR:-/tmp/flagship-scale}
rate=${SCALE_RATE:-1800}
mkdir -p "$dir"

swift build -c release --product flagship >&2
[ "${SCALE_SOAK:-0}" = 1 ] && swift build -c release --product flagship-soak >&2
bin=$(swift build -c release --show-bin-path)
tool=$bin/flagship

say() { echo "scale: $*" >&2; }
drop_caches() { sync; [ -w /proc/sys/vm/drop_caches ] && echo 1 > /proc/sys/vm/drop_caches || true; }
# Seconds and peak resident KB of a command, its output dropped: "SECONDS KB".
timed() { /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$@" >/dev/null 2>&1; cat "$dir/time.txt"; }
# The retention (seconds) whose boundary leaves the first `due` visitors of a store due.
retention_for() { echo $(( $(date +%s) - (1732170000000 + $1 + 1) / 1000 )); }

declare -A figure
for n in "${sizes[@]}"; do
    store=$dir/$n.sqlite
    say "store of $n visitors: $store"
    Scripts/scale-store.sh "$tool" "$store" "$n"
    cp "$store" "$dir/work.sqlite"
    drop_caches
    figure[$n,restart]=$(Scripts/crash-restart.sh "$tool" "$dir/work.sqlite" "$n" 3 | sed -n 's/^median: \([0-9.]*\) s.*/\1 s/p')
    rm -f "$dir/work.sqlite" "$dir/work.sqlite-wal" "$dir/work.sqlite-shm"

    drop_caches
    read -r seconds kb < <(timed "$tool" visitors --db "$store")
    figure[$n,visitors]="$seconds s / $((kb / 1024)) MB"
    drop_caches
    read -r seconds kb < <(timed "$tool" db inspect --db "$store")
    figure[$n,inspect]="$seconds s / $((kb / 1024)) MB"

    tenth=$((n / 10))
    for kind in retention budget; do
        cp "$store" "$dir/work.sqlite"
        drop_caches
        if [ $kind = retention ]; then
            args=(--retention "$(retention_for "$tenth")")
        else
            args=(--retention 0 --max-visitors $((n - tenth)))
        fi
        line=$("$tool" db prune --db "$dir/work.sqlite" "${args[@]}")
        line=${line%%$'\n'*}
        rm -f "$dir/work.sqlite" "$dir/work.sqlite-wal" "$dir/work.sqlite-shm"
        deleted=$(sed -n 's/^deleted \([0-9]*\) visitor.*/\1/p' <<<"$line")
        ms=$(sed -n 's/.* transaction(s), \([0-9]*\) ms.*/\1/p' <<<"$line")
        hold=$(sed -n 's/.*the longest held the write lock \([0-9.]*\) ms.*/\1/p' <<<"$line")
        figure[$n,$kind]=$(awk -v d="$deleted" -v ms="$ms" -v h="$hold" \
            'BEGIN { printf "%d visitors/s, %.3f ms each, longest hold %s ms", d / (ms / 1000), ms / d, h }')
    done

    if [ "${SCALE_SOAK:-0}" = 1 ]; then
        say "soak at $rate visitors/s on a copy of the store (120 s)"
        # The first prune comes a minute after the start: the boundary then leaves a tenth due.
        out=$("$bin/flagship-soak" --rate "$rate" --duration 120 --new-share 0.8 --quiet --csv "$dir/soak.csv" \
              --retention $(( $(retention_for "$tenth") + 60 )) --store "$store")
        lost=$(sed -n 's/.*evicted \([0-9]*\), lost \([0-9]*\), shed \([0-9]*\).*/evicted \1, lost \2, shed \3/p' <<<"$out")
        prune=$(sed -n 's/^prune *//p' <<<"$out")
        prune=${prune%%$'\n'*}
        # The p99 of each 10 s sample, lowest and highest: a returning visitor's fetch, an awaited hit.
        p99=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                       $c["fetch_flags_p99_ms"] != "" {
                           f = $c["fetch_flags_p99_ms"] + 0; h = $c["send_hit_p99_ms"] + 0
                           if (n++ == 0) { f0 = f1 = f; h0 = h1 = h }
                           if (f < f0) f0 = f; if (f > f1) f1 = f; if (h < h0) h0 = h; if (h > h1) h1 = h }
                       END { printf "fetch p99 %.1f – %.1f ms, sendHit p99 %.1f – %.1f ms", f0, f1, h0, h1 }' "$dir/soak.csv")
        rm -f "$dir/soak.csv"
        figure[$n,soak]="$lost; $p99; $(sed -n 's/^verdict *//p' <<<"$out"); ${prune:-no prune ran}"
    fi
done

# A start on a stored bucketing file of growing size: from its compiled form, and from its JSON
# (the form dropped, as a store of an older SDK starts); and `flagship eval` on the file. Files of
# random campaigns (Scripts/bucketing-file.py), stored by a first online fetch against `flagship
# serve`; each figure the median of 5 runs (seconds) with the largest peak RSS.
campaign_counts=(${SCALE_CAMPAIGNS:-100 6000 10000})
declare -A bucketing
median_timed() {
    local runs=() peak=0 seconds kb
    for _ in 1 2 3 4 5; do
        [ -n "${before_each:-}" ] && $before_each
        read -r seconds kb < <(timed "$@")
        runs+=("$seconds"); [ "$kb" -gt "$peak" ] && peak=$kb
    done
    echo "$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 3p) s / $((peak / 1024)) MB"
}
drop_compiled() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE bucketing SET compiled = NULL"); c.commit()' "$bstore"; }
for c in "${campaign_counts[@]}"; do
    file=$dir/bucketing-$c.json
    [ -s "$file" ] || python3 Scripts/bucketing-file.py "$c" > "$file"
    say "stored bucketing file of $c campaigns ($(stat -c %s "$file") bytes)"
    "$tool" serve --env-id scale --api-key scale-key --port 0 --bucketing-file "$file" > "$dir/serve.log" 2>&1 &
    served=$!
    url=
    for _ in $(seq 100); do
        url=$(sed -n 's/^Flagship local server on \(http:[^ ]*\).*/\1/p' "$dir/serve.log")
        [ -n "$url" ] && break
        sleep 0.1
    done
    bstore=$dir/bucketing-$c.sqlite
    rm -f "$bstore" "$bstore-wal" "$bstore-shm"
    args=(--env-id scale --api-key scale-key --mode bucketing --bucketing-file-maximum-bytes 100000000 --visitor-id v1 --context '{"age":30}')
    "$tool" fetch --db "$bstore" "${args[@]}" --decision-url "$url/v2" --events-url "$url" --bucketing-url "$url" >/dev/null 2>&1
    kill "$served"; wait "$served" 2>/dev/null || true
    bucketing[$c,compiled]=$(before_each= median_timed "$tool" fetch --db "$bstore" "${args[@]}" --offline)
    bucketing[$c,json]=$(before_each=drop_compiled median_timed "$tool" fetch --db "$bstore" "${args[@]}" --offline)
    bucketing[$c,eval]=$(before_each= median_timed "$tool" eval --bucketing-file "$file" --bucketing-file-maximum-bytes 100000000 --visitor-id v1)
    bucketing[$c,bytes]=$(stat -c %s "$file")
    rm -f "$bstore" "$bstore-wal" "$bstore-shm" "$dir/serve.log"
done

rows=(restart "start after a crash" visitors "\`flagship visitors\` (default): time / peak RSS"
      inspect "\`flagship db inspect\` (default): time / peak RSS" retention "retention prune of a tenth"
      budget "eviction of a tenth by budget")
[ "${SCALE_SOAK:-0}" = 1 ] && rows+=(soak "a prune of a tenth under the soak at $rate visitors/s")
header="| what |" rule="|---|"
for n in "${sizes[@]}"; do header+=" $n |"; rule+="---|"; done
for ((i = 1; i < ${#sizes[@]}; i++)); do header+=" growth ${sizes[i-1]} → ${sizes[i]} |"; rule+="---|"; done
echo "$header"; echo "$rule"
for ((r = 0; r < ${#rows[@]}; r += 2)); do
    key=${rows[r]} line="| ${rows[r+1]} |"
    for n in "${sizes[@]}"; do line+=" ${figure[$n,$key]:-} |"; done
    for ((i = 1; i < ${#sizes[@]}; i++)); do
        # The growth of the first number of each figure (seconds, visitors a second).
        line+=" $(awk -v a="${figure[${sizes[i-1]},$key]%% *}" -v b="${figure[${sizes[i]},$key]%% *}" \
            'BEGIN { if (a > 0 && b > 0) printf "%.2f×", b / a }') |"
    done
    echo "$line"
done

echo
echo "| stored bucketing file | start, compiled: time / peak RSS | start from its JSON (then compiled and written) | \`flagship eval\` on the file |"
echo "|---|---|---|---|"
for c in "${campaign_counts[@]}"; do
    echo "| $c campaigns (${bucketing[$c,bytes]} bytes) | ${bucketing[$c,compiled]} | ${bucketing[$c,json]} | ${bucketing[$c,eval]} |"
done
