#!/usr/bin/env bash
# Used for the bytes-per-visitor table of Benchmarks/README.md (Bounded storage): BIN is a release flagship-soak.
# bytes.sh BIN OUT [soak args...]: runs a short soak, copies the store at 15 s, prints bytes per visitor.
bin="$1"; out="$2"; shift 2
before=$(ls -d /tmp/flagship-soak-* 2>/dev/null | sort)
"$bin" --rate 300 --duration 20 --quiet "$@" > "$out.txt" 2>&1 &
pid=$!
sleep 15
dir=$(comm -13 <(echo "$before") <(ls -d /tmp/flagship-soak-* | sort) | head -1)
sqlite3 "$dir/flagship.sqlite" ".backup $out.sqlite"
wait $pid
visitors=$(sqlite3 "$out.sqlite" "select count(*) from visitors")
sqlite3 "$out.sqlite" "select 'as_written_bytes_per_visitor', ((select page_count from pragma_page_count) - (select freelist_count from pragma_freelist_count) - (select count(*) from dbstat where name = 'hits' or name like '%hits%')) * (select page_size from pragma_page_size) * 1.0 / $visitors"
sqlite3 "$out.sqlite" "VACUUM;"
visitors=$(sqlite3 "$out.sqlite" "select count(*) from visitors")
echo "visitors $visitors"
sqlite3 "$out.sqlite" "select name, sum(pgsize) from dbstat group by name order by 2 desc limit 8"
sqlite3 "$out.sqlite" "select 'total_bytes', (select page_count from pragma_page_count) * (select page_size from pragma_page_size)"
sqlite3 "$out.sqlite" "select 'bytes_per_visitor_visitors_decisions', (select sum(pgsize) from dbstat where name in ('visitors','decisions','decisions_by_visitor','sqlite_autoindex_visitors_1','visitors_by_last_seen','shared_variations','shared_contexts','sqlite_autoindex_shared_variations_1','sqlite_autoindex_shared_contexts_1')) * 1.0 / $visitors"
