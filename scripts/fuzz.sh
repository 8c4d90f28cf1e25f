#!/usr/bin/env bash
# Fuzzes every loader (CSV data, model file, chain CSV, edge list) and the command-line options
# (cli_options) with clang's libFuzzer on the ASan + UBSan build in build-fuzz/. Installs clang
# for this purpose only (setup.sh --fuzz).
#
#   bash scripts/fuzz.sh              # each target for 60 s, one after the other
#   bash scripts/fuzz.sh 900          # each target for 15 minutes
#   bash scripts/fuzz.sh 900 csv      # one target
#   OCCAM_FUZZ_JOBS=2 bash scripts/fuzz.sh 900   # targets two at a time (niced)
#
# New interesting inputs collect in build-fuzz/fuzz/work/<target>; an input that fails (crash,
# uncaught exception, sanitizer report, more than 2 GB, more than 10 s) is written to
# build-fuzz/fuzz/findings/ and the script exits non-zero (findings of earlier runs are left there
# and named, not counted again). Replay one with
# build-fuzz/fuzz/<target>_fuzz <file>; once fixed, add it to fuzz/corpus/<target>/ so the
# ordinary test suite replays it for ever. `cd build-fuzz && ctest -L fuzzing` runs each target for
# OCCAM_FUZZ_SECONDS (15 s by default).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
targets=("${@:2}")
[ ${#targets[@]} -gt 0 ] || targets=(csv model_file chain_csv edge_list cli_options)
jobs=${OCCAM_FUZZ_JOBS:-1}

bash scripts/setup.sh --fuzz
OCCAM_BUILD_DIR=build-fuzz bash scripts/build.sh -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DOCCAM_FUZZ=ON -DOCCAM_BUILD_TESTS=OFF -DOCCAM_BUILD_BENCH=OFF

run_target() {
  local name=$1 dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  mkdir -p "build-fuzz/fuzz/work/$name" build-fuzz/fuzz/findings
  nice "build-fuzz/fuzz/${name}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 "${dict[@]}" -artifact_prefix="build-fuzz/fuzz/findings/$name-" \
    "build-fuzz/fuzz/work/$name" "fuzz/corpus/$name" > "build-fuzz/fuzz/$name.log" 2>&1
}

# Findings of earlier runs stay where they are (look at them, fix, then delete them); this run
# reports only the ones it adds.
mkdir -p build-fuzz/fuzz/findings
earlier=$(ls build-fuzz/fuzz/findings)
status=0
running=0
for name in "${targets[@]}"; do
  run_target "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || status=1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done

for name in "${targets[@]}"; do
  echo "== $name: $(grep -E '^stat::number_of_executed_units' "build-fuzz/fuzz/$name.log" | awk '{print $2}') runs," \
       "$(grep -E '^stat::peak_rss_mb' "build-fuzz/fuzz/$name.log" | awk '{print $2}') MB peak, corpus" \
       "$(find "build-fuzz/fuzz/work/$name" -type f | wc -l) files (log: build-fuzz/fuzz/$name.log)"
done
new_findings=$(comm -13 <(echo "$earlier") <(ls build-fuzz/fuzz/findings))
if [ "$status" -ne 0 ] || [ -n "$new_findings" ]; then
  echo "new findings in build-fuzz/fuzz/findings:" >&2
  echo "$new_findings" >&2
  exit 1
fi
[ -z "$earlier" ] || echo "(earlier findings, not from this run, still in build-fuzz/fuzz/findings: $(echo $earlier))"
