#!/usr/bin/env bash
# The transformers side of docs/SPEED.md's Gemma 4 CPU prefill comparison (issue 73): Hugging Face transformers
# 5.16.0.dev0 at upstream commit c1ff11866b, untouched, on Debian 13's python3-torch 2.6, fp32, random weights,
# the same config file `ropescope bench model --config C --random --layers N` reads, its first N decoder layers.
#
#   bash scripts/bench_transformers_gemma.sh setup
#   bash scripts/bench_transformers_gemma.sh run --config resources/configs/gemma-4-31b.json --layers 6 [--runs 3]
#        [--threads 1] [--blas-threads 2] [--attn sdpa|eager] [--text-tokens 216] [--image-tokens 784]
#
# What a run times (median of --runs after one untimed round of each; rounds interleaved, as bench model does):
# - `text`: Gemma4ForCausalLM(input_ids, use_cache=False, logits_to_keep=1) on 1,002 random ids: the decoder's
#   prefill with the last token's logits (what RopeScope's `decoder_ms` times), causal and sliding masks as transformers
#   builds them for text;
# - `image_mask`: the same forward with bench model's layout (108 text, boi, 784 image tokens, eoi, 108 text) and the
#   masks Gemma4Model builds from mm_token_type_ids (the image block bidirectional on sliding layers), mask building
#   timed: the work RopeScope's decoder does on its synthetic prompt (its image embeddings aside);
# - with a MoE config: the first layer's router + experts (Gemma4TextRouter, Gemma4TextExperts) on the prompt's
#   tokens against a dense gated gelu MLP of the active width (top-k x moe_intermediate_size), interleaved.
#
# Threads: --threads sets torch.set_num_threads (LibTorch's intra-op OpenMP pool), --blas-threads OpenBLAS's
# pthread pool (OPENBLAS_NUM_THREADS), which runs torch's fp32 GEMMs. RopeScope on the CPU runs 1 + 2 (its bench
# JSON's `device`), so those are the defaults.
#
# The environment: a copy of check_libtorch2.sh's trixie chroot (never that chroot itself: CI uses it), with
# python3-torch and transformers' runtime dependencies from Debian, transformers' source from commit c1ff11866b and
# huggingface_hub v1.5.0's source (not in Debian 13) under /opt/hf/src. Two things are stood in for at import
# time, as the Gemma fixtures' generator did (tests/data/fixtures/README.md, "Gemma fixtures"): an import-only
# `tokenizers` module (no model code uses it), and transformers' import-time version check
# (dependency_versions_check), skipped: Debian's regex is 2024.11.6 where transformers asks >= 2025.10.22 (a
# tokenizer dependency), and huggingface_hub from source has no installed metadata to read.
# Needs root (chroot, mounting /proc: without /proc, torch's cpuinfo sees no AVX and its kernels fall back).
set -euo pipefail
cd "$(dirname "$0")/.."

root=${ROPESCOPE_HF_CHROOT:-/var/cache/ropescope/trixie-hf}
base=${ROPESCOPE_TRIXIE_CHROOT:-/var/cache/ropescope/trixie}
transformers_git=${TRANSFORMERS_GIT:-/work/.mirror/8b-is+transformers/repo} # any clone holding c1ff11866b
hub_git=${HUGGINGFACE_HUB_GIT:-/work/.mirror/huggingface+huggingface_hub/repo} # any clone holding tag v1.5.0
transformers_commit=c1ff11866b
hub_tag=v1.5.0
packages=(python3-torch python3-numpy python3-safetensors python3-packaging python3-yaml python3-regex python3-tqdm
  python3-filelock python3-requests python3-httpx python3-fsspec python3-typing-extensions python3-typer)
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"

in_root() { # a command in the chroot with /proc mounted, unmounted on any exit
  $sudo mount -t proc proc "$root/proc"
  local rc=0
  $sudo chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@" || rc=$?
  $sudo umount "$root/proc"
  return $rc
}

setup() {
  if [ ! -d "$root" ]; then
    [ -d "$base" ] || { echo "bench_transformers_gemma: no $base: run scripts/check_libtorch2.sh once to make it" >&2; exit 1; }
    echo "bench_transformers_gemma: copying $base to $root"
    $sudo cp -a "$base" "$root.partial" && $sudo mv "$root.partial" "$root"
  fi
  in_root bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${packages[*]} > /tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }"
  $sudo rm -rf "$root/opt/hf" && $sudo mkdir -p "$root/opt/hf"
  git -C "$transformers_git" archive "$transformers_commit" src/transformers | $sudo tar -x -C "$root/opt/hf"
  git -C "$hub_git" archive "$hub_tag" src/huggingface_hub | $sudo tar -x -C "$root/opt/hf"
  echo "$transformers_commit $hub_tag" | $sudo tee "$root/opt/hf/VERSIONS" > /dev/null
  echo "bench_transformers_gemma: set up in $root (transformers $transformers_commit, huggingface_hub $hub_tag)"
}

run() {
  local config="" threads=1 blas=2 args=()
  while [ $# -gt 0 ]; do
    case $1 in
      --config) config=$2; shift 2 ;;
      --threads) threads=$2; args+=(--threads "$2"); shift 2 ;;
      --blas-threads) blas=$2; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [ -f "$config" ] || { echo "bench_transformers_gemma: --config FILE (a Gemma 4 config.json) is required" >&2; exit 2; }
  [ -d "$root/opt/hf/src/transformers" ] || { echo "bench_transformers_gemma: run '$0 setup' first" >&2; exit 1; }
  local work; work=$($sudo mktemp -d "$root/tmp/bench_gemma.XXXXXX")
  $sudo cp "$config" "$work/config.json"
  $sudo cp scripts/bench_transformers_gemma.py "$work/bench.py"
  local inner=/tmp/$(basename "$work") rc=0
  in_root env OPENBLAS_NUM_THREADS="$blas" OMP_NUM_THREADS="$threads" PYTHONPATH=/opt/hf/src PYTHONDONTWRITEBYTECODE=1 \
    python3 "$inner/bench.py" --config "$inner/config.json" --config-name "$(basename "$config")" --blas-threads "$blas" "${args[@]}" || rc=$?
  $sudo rm -rf "$work"
  return $rc
}

case ${1:-} in
  setup) setup ;;
  run) shift; run "$@" ;;
  *) sed -n '2,8p' "$0"; exit 2 ;;
esac
exit 0
