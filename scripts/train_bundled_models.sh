#!/usr/bin/env bash
# Regenerates the bundled models (resources/models/*) and their measured evaluations, the source of the
# docs/MODELS.md's Results table (eval.json: the generator's pictures; eval_drawn.json: the second test set, drawn
# otherwise; eval_user_drawn.json: tests/data/drawn, pictures made with ImageMagick). Training draws every other picture with the Varied rendering (core/model/training/synthetic_task.h). The paper's protocol: a base trained from scratch with mrope, then each other
# scheme fine-tunes the decoder from it with the vision tower and merger frozen.
#   bash scripts/train_bundled_models.sh [OUTPUT_DIR]     (default resources/models; ROPESCOPE=binary)
set -euo pipefail
bin=${ROPESCOPE:-build/bin/ropescope}
out=${1:-resources/models}
base_steps=${BASE_STEPS:-6000}
tune_steps=${TUNE_STEPS:-1200}
tune_lr=${TUNE_LR:-5e-4}
base=${BASE_DIR:-build/bundled-base}

# The common base: everything trainable, cell-naming loss on; not bundled itself (see README, Results).
[ -d "$base" ] || "$bin" train --scheme mrope --steps "$base_steps" --lr 1e-3 --seed 1 --output "$base"

# Every bundled model, mrope included (the control), gets the same decoder-only budget from the base.
tune() {
    local name=$1
    shift
    [ -d "$out/$name" ] || "$bin" train --from "$base" --steps "$tune_steps" --lr "$tune_lr" --seed 2 --output "$out/$name" "$@"
}
tune mrope --scheme mrope
tune hard --scheme hard
tune unordered --scheme unordered
tune circle --scheme circle --alpha 0.5 --radius 16
tune circle_age --scheme circle --alpha 0.5 --radius 16 --age strategy_4
tune vrope --scheme vrope
tune harope --scheme mrope --harope

for dir in "$out"/*/; do
    "$bin" eval --model "$dir" --json --output "$dir/eval.json"
    "$bin" eval --model "$dir" --scheme mrope --json --output "$dir/eval_under_mrope.json"
    "$bin" eval --model "$dir" --rendering drawn --json --output "$dir/eval_drawn.json"
    "$bin" eval --model "$dir" --questions tests/data/drawn/questions.jsonl --json --output "$dir/eval_user_drawn.json"
done
