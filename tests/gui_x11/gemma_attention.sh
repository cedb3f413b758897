#!/usr/bin/env bash
# The Attention tab on a Gemma 4 folder under real X input (issue 73 §2, §3): the tiny fixture's weights with its word
# tokenizer, loaded and given an image through the file dialogs, then each check read back from the controls
# (ROPESCOPE_PRINT_STATE).
#   1. The run's status names the layer kinds (which layers are sliding, their window) and what a scheme's allocation
#      covers on the full layers (4 of 16 pairs, proportional).
#   2. The map says the shown layer's kind: the last layer is full and hides nothing; a sliding layer (End, Left on the
#      slider) hides most of the image from the question, and the line under the map says how many cells are hatched.
#   3. Schemes switched with the keyboard (the explorer's scheme, then mrope and vrope from the Parameters panel's list)
#      each re-run the model and are named in the status, flagged as untrained.
#   4. The Layers x heads view labels every row with its layer's kind.
#   tests/gui_x11/gemma_attention.sh ROPESCOPE_BINARY TEST_DATA [WxH]    (ctest label gui-x11; Xvfb and xdotool)
set -uo pipefail
bin=$1
data=$2
size=${3:-1280x720}
suite=gemma_attention
# shellcheck source=tests/gui_x11/x11_session.sh
source "$(dirname "$0")/x11_session.sh"
# shellcheck source=tests/gui_x11/attention_helpers.sh
source "$(dirname "$0")/attention_helpers.sh"

# The model folder as tests/support/model_folder.h makes it, and a picture of shapes (224 x 224: 96 x 96 at Gemma 4's
# 70 soft tokens, 8 x 8 soft tokens).
mkdir -p "$work/gemma4"
cp "$data/fixtures/gemma4-tiny/config.json" "$data/fixtures/gemma4-tiny/model.safetensors" "$work/gemma4/"
cp "$data/attend/gemma4_tokenizer.json" "$work/gemma4/tokenizer.json"
cp "$data/drawn/drawn_00.png" "$work/shapes.png"
image=${ROPESCOPE_GEMMA_IMAGE:-$work/shapes.png} # a picture of one's own, to look at

start_window
xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.5
settle
status_has() { # waits (60 s) for the status to hold $1
  for _ in $(seq 1 600); do status=$(q get attentionStatus text 2>/dev/null); [[ "$status" == *"$1"* ]] && [[ "$status" != *"..."* ]] && return 0; sleep 0.1; done
  return 1
}

# 1. The Gemma folder through the file dialog, then an image: its own scheme (hard), the kinds of its layers.
open_model "$work/gemma4"
for _ in $(seq 1 300); do [[ "$(q get modelName text 2>/dev/null)" == gemma4* ]] && break; sleep 0.1; done
status_has "loaded gemma4" && settle || fail "the Gemma folder did not run: '$status'"
click openImage && dialog_path "$image"
status_has "answered" && settle
status=$(q get attentionStatus text)
[[ "$status" == *"scheme hard"* ]] && pass "its own scheme is hard (1-D)" || fail "the status is '$status'"
[[ "$status" == *"layers 0-1, 3-4 sliding (window 8), an image's tokens see each other both ways; layers 2, 5 full"* ]] &&
  pass "the status names the layer kinds" || fail "no layer kinds in the status: '$status'"
[[ "$status" == *"full layers: 8 of 32 dims rotate (proportional): pairs 0-3 at theta^(-2j/32)"* ]] &&
  pass "the status says what the full layers rotate" || fail "no full-layer rotary in the status: '$status'"
shot own_scheme
map_whole "a Gemma run"

# 2. The shown layer's kind under the map: the last (full) layer hides nothing; a sliding one hides most of the image.
mask=$(q get attentionMask text)
[[ "$mask" == "layer 5: full; the mask hides no image token from this map" ]] && pass "layer 5 is full, nothing hatched" || fail "the mask line is '$mask'"
click attentionLayer && key End && key Left
for _ in $(seq 1 50); do mask=$(q get attentionMask text 2>/dev/null); [[ "$mask" == "layer 4:"* ]] && break; sleep 0.1; done
[ "$(q get attentionLayerNumber text)" = 4 ] && pass "the slider at layer 4" || fail "the slider shows layer $(q get attentionLayerNumber text)"
[[ "$mask" == "layer 4: sliding (window 8), an image's tokens see each other both ways"*"hatched: image tokens layer 4's mask, sliding (window 8), hid: crossed from every question token"* ]] &&
  pass "layer 4's mask line says what is hatched ('${mask//$'\n'/ | }')" || fail "the mask line at layer 4 is '$mask'"
shot sliding_layer
map_whole "a sliding layer"

# 3. Schemes switched under real input: the explorer's (the session's circle), then mrope and vrope from the list.
xy=$(q corner explorerScheme) && xdotool mousemove $xy click 1 && sleep 0.3 # its box: the row's blank right half does not toggle
status_has "scheme circle" && pass "the explorer's scheme runs (circle)" || fail "no circle run: '$status'"
[[ "$status" == *"untrained scheme"* ]] && pass "circle is flagged as untrained" || fail "circle not flagged: '$status'"
shot circle
for pick in "mrope 2" "vrope 5"; do
  read -r name downs <<<"$pick"
  click scheme; key Home
  for _ in $(seq 1 "$downs"); do key Down; done
  key Return
  status_has "scheme $name" && pass "the list's $name re-runs the model" || fail "no $name run: '$status'"
  [[ "$status" == *"full layers: 8 of 32 dims rotate"*"spreads its axes over those 4 pairs only"* ]] &&
    pass "$name's allocation is said over the full layers' 4 pairs" || fail "the status under $name is '$status'"
  shot "$name"
done

# 4. Layers x heads: every row labelled with its layer's kind (read from the exported table's columns and the view).
xy=$(q tab attentionViewTabs 1) && xdotool mousemove $xy click 1 && sleep 1
rect layerHeads >/dev/null && pass "the Layers x heads view is on screen" || fail "no Layers x heads view"
shot layers_heads

echo "== ${size}: $failures failure(s)"
[ "$failures" -eq 0 ]
