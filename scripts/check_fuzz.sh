#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (parsers of files from outside), built with clang under ASan and
# UBSan, each run for SECONDS (default 60) from seeds taken from the repository's own files. Developers
# run it before they stop; scripts/setup.sh test builds the targets (--build-only) where clang is there.
#   scripts/check_fuzz.sh [SECONDS]      build, then fuzz every target; non-zero when one finds a fault
#   scripts/check_fuzz.sh --build-only   build the targets only
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-60}
if ! command -v clang++ >/dev/null 2>&1; then
  echo "check_fuzz: clang++ is not installed (apt-get install clang); the fuzz targets need libFuzzer" >&2
  exit 2
fi
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake --preset fuzz >/dev/null # CMakePresets.json: clang, RelWithDebInfo, ROPESCOPE_FUZZ
cmake --build build-fuzz -j2
[ "$mode" = --build-only ] && exit 0
case "$mode" in ''|*[!0-9]*) echo "usage: scripts/check_fuzz.sh [SECONDS] | --build-only" >&2; exit 2 ;; esac

# Seeds: real inputs of each kind, so the fuzzer starts past the first bytes of the formats.
seeds() {
  case "$1" in
    safetensors) find resources/models tests/data/fixtures -name '*.safetensors' -size -2M ;;
    tokenizer) find tests/data -name 'tokenizer.json' -size -4M ;;
    config) find resources/models tests/data/fixtures -name 'config.json' ;;
    preprocess) find resources/models tests/data -name 'preprocessor_config.json' ;;
    questions) find tests/data -name '*.jsonl' ;;
    job) find resources tests/data -path '*jobs*' -name '*.json' ;;
    session) find resources tests/data -name '*.ropescope.json' ;;
    position_file) find tests/data/fuzz_seeds/position_file -type f 2>/dev/null ;;
    bias_state) find tests/data/fuzz_seeds/bias_state -type f 2>/dev/null ;;
    npz) find tests/data/fuzz_seeds/npz -type f 2>/dev/null ;;
    pt) find tests/data/fuzz_seeds/pt -type f 2>/dev/null ;; # tests/data/positions/torch_save/make.py writes them
    slurm_script) find tests/data/fuzz_seeds/slurm_script -type f 2>/dev/null ;;
  esac
}

failed=0
for bin in build-fuzz/bin/fuzz_*; do
  name=${bin##*/fuzz_}
  corpus=$(mktemp -d)
  while IFS= read -r f; do [ -f "$f" ] && cp "$f" "$corpus/$(echo "$f" | tr '/' '_')"; done < <(seeds "$name")
  echo "== fuzz_$name: ${mode} s from $(ls "$corpus" | wc -l) seeds"
  if ! "$bin" "$corpus" -max_total_time="$mode" -rss_limit_mb=4096 -max_len=1048576 -timeout=20 \
        -artifact_prefix="build-fuzz/crash-$name-" >"build-fuzz/fuzz_$name.log" 2>&1; then
    echo "fuzz_$name FAILED: see build-fuzz/fuzz_$name.log and build-fuzz/crash-$name-*"
    tail -30 "build-fuzz/fuzz_$name.log"
    failed=$((failed + 1))
  else
    grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "build-fuzz/fuzz_$name.log" | tail -1 || true
  fi
  rm -rf "$corpus"
done
[ $failed -eq 0 ] && echo "check_fuzz: every target ran ${mode} s without a fault" || exit 1
