#!/usr/bin/env bash
# The walkthrough behind `make demo`: a database in a temporary directory, sample rows written
# through the SDK's default caches, then the same facts through `flagship` and the sqlite3 shell.
set -euo pipefail
flagship="$1"
workdir="$(mktemp -d -t flagship-demo-XXXXXX)"
trap 'rm -rf "$workdir"' EXIT
db="$workdir/flagship-demo_env.sqlite"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "1. Create the database (migrations embedded in the binary)"
show "$flagship" db migrate --db "$db"

step "2. Write visitors and unsent hits through FSDefaultCacheVisitor and FSDefaultCacheHit"
show "$flagship" demo seed --cache-dir "$workdir" --env-id demo_env

step "3. What the store holds"
show "$flagship" db inspect --db "$db"
show "$flagship" visitors --db "$db"
show "$flagship" hits --db "$db" --limit 5

step "4. The same, with the sqlite3 shell: paste these to explore your own cache"
printf 'DB=%s\n' "$db"
query() { printf '$ sqlite3 -header -column %s "%s"\n' "\$DB" "$1"; sqlite3 -header -column "$db" "$1"; echo; }
query "SELECT version, name, datetime(applied_at/1000,'unixepoch') AS applied_utc FROM schema_migrations;"
query "SELECT visitor_id, consent, datetime(updated_at/1000,'unixepoch') AS updated_utc FROM visitors;"
query "SELECT type, count(*) AS hits FROM hits GROUP BY type ORDER BY type;"
query "SELECT id, json_extract(document,'\$.data.content.ea') AS action, attempts FROM hits WHERE type = 'EVENT' ORDER BY created_at LIMIT 3;"
query "SELECT visitor_id, type, created_utc, age_seconds FROM hits_readable ORDER BY created_utc LIMIT 3;"

step "Done. The database was at $db (removed now); yours is at \${FLAGSHIP_CACHE_DIR:-~/.cache/flagship}/flagship-<envId>.sqlite"
