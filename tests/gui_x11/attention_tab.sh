#!/usr/bin/env bash
# The Attention tab under real X input (issue 56 items 1-4): xdotool's clicks, keys and typing into the real
# window and its file dialog, each check read back from the controls' places (ROPESCOPE_PRINT_STATE).
#   1. The map is drawn whole after Readouts are hidden, a model loaded, and Readouts shown again.
#   2. The side column keeps its width after a long answer (the tiny GLM-V model's): every button inside it.
#   3. After a model folder fails to load, the Question field is on screen, clear of the notes around it.
#   4. Run stays where it is while a question with words the model cannot read is typed.
#   5. A mixture-of-experts model (the tiny GLM-4.5V): it runs, the status names its mixture, and the Experts
#      view it brings answers a click on a cell (issue 55).
#   tests/gui_x11/attention_tab.sh ROPESCOPE_BINARY TEST_DATA [WxH]    (ctest label gui-x11; Xvfb and xdotool)
set -uo pipefail
bin=$1
data=$2
size=${3:-1280x720}
suite=attention_tab
# shellcheck source=tests/gui_x11/x11_session.sh
source "$(dirname "$0")/x11_session.sh"

# Model folders as tests/support/model_folder.h makes them: a fixture's config and weights, and a tokenizer.
mkdir -p "$work/glm" "$work/no-tokenizer" "$work/glm-moe"
cp "$data/fixtures/glm4vmoe-tiny/config.json" "$data/fixtures/glm4vmoe-tiny/model.safetensors" "$work/glm-moe/"
cp "$data/attend/glm_tokenizer.json" "$work/glm-moe/tokenizer.json"
cp "$data/fixtures/glm4v-tiny/config.json" "$data/fixtures/glm4v-tiny/model.safetensors" "$work/glm/"
cp "$data/attend/glm_tokenizer.json" "$work/glm/tokenizer.json"
cp "$data/fixtures/qwen2vl-tiny/config.json" "$data/fixtures/qwen2vl-tiny/model.safetensors" "$work/no-tokenizer/"

# shellcheck source=tests/gui_x11/attention_helpers.sh
source "$(dirname "$0")/attention_helpers.sh"
start_window

xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.5
settle
shot first_run
map_whole "first run"

# 4. Typing a question the model cannot read all of: the note comes and goes, Run stays put.
run0=$(rect run)
click question
key ctrl+a
moved=0
for word in what colour is the big circle; do
  xdotool type --delay 30 "$word "
  sleep 0.4
  [ "$(rect run)" = "$run0" ] || moved=1
  [ "$(q get questionNote text 2>/dev/null)" != "" ] && noted=1
done
[ "${noted:-0}" = 1 ] && pass "the vocabulary note appeared while typing" || fail "no vocabulary note while typing 'big'"
[ $moved = 0 ] && pass "Run stayed at $run0 while the question was typed" || fail "Run moved while typing (from $run0 to $(rect run))"
key ctrl+a; xdotool type --delay 20 "what colour is the circle"; sleep 0.4
[ "$(rect run)" = "$run0" ] && pass "Run in place after the note went" || fail "Run moved when the note went ($(rect run), was $run0)"

# 1. Readouts hidden, a model loaded (the tiny GLM-V: a long answer, item 2), Readouts shown again. Each
# Ctrl+Shift+R must have reached the window: the dock's state is read back, not assumed.
readouts_shown() { q rect readoutsDock >/dev/null 2>&1; }
toggle_readouts() { # $1: shown or hidden, the state wanted
  local want=$1
  for attempt in 1 2; do
    xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.3 # the window has the keyboard, not a closed dialog
    key ctrl+shift+r
    for _ in $(seq 1 30); do
      if [ "$want" = shown ] && readouts_shown || { [ "$want" = hidden ] && ! readouts_shown; }; then return 0; fi
      sleep 0.1
    done
  done
  fail "Ctrl+Shift+R left the Readouts $( readouts_shown && echo shown || echo hidden), not $want"
}
readouts_shown && pass "Readouts shown at the start" || fail "no Readouts dock at the start"
toggle_readouts hidden
open_model "$work/glm"
for _ in $(seq 1 300); do [[ "$(q get modelName text 2>/dev/null)" == glm* ]] && break; sleep 0.1; done
settle
map_whole "Readouts hidden, a model loaded"
toggle_readouts shown
sleep 1
shot readouts_shown_again
map_whole "Readouts shown again"
xy=$(q tab mainTabs 0) && xdotool mousemove $xy click 1 && sleep 0.5
xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.5
map_whole "after a tab switch"

# 2. The long answer wraps in the column; every button is inside it and Image... answers a click.
answer=$(q get answer text)
[ ${#answer} -gt 60 ] && pass "a long answer (${#answer} characters)" || fail "the GLM-V answer is short ('$answer'): no long-answer check"
column_whole "after a long answer"

# 3. A model folder without tokenizer.json: the error says so, the Question field stays.
open_model "$work/no-tokenizer"
for _ in $(seq 1 300); do [ -n "$(q get attentionError text 2>/dev/null)" ] && break; sleep 0.1; done
error=$(q get attentionError text)
shot failed_load
[[ "$error" == *"no tokenizer.json"* ]] && pass "the error names the missing tokenizer.json" || fail "the error is '$error'"
qr=$(rect question) || fail "the Question field is gone after a failed load"
if [ -n "${qr:-}" ]; then
  read -r _ _ _ qh <<<"$qr"
  [ "$qh" -ge 16 ] && pass "the Question field is ${qh} px high" || fail "the Question field is squashed to ${qh} px"
  for other in attentionError questionNote modelInputs run; do
    o=$(rect "$other" 2>/dev/null) || continue
    overlap "$qr" "$o" && fail "the Question field ($qr) lies under $other ($o)" || pass "the Question field clear of $other"
  done
  inside_x "$qr" "$(rect attentionControls)" && pass "the Question field inside the column" || fail "the Question field ($qr) past the column"
fi
column_whole "after a failed load"

# 5. A mixture of experts: its run, its status line, and the Experts view through a real click on its tab and a cell.
open_model "$work/glm-moe"
for _ in $(seq 1 300); do [[ "$(q get modelName text 2>/dev/null)" == glm-moe* ]] && break; sleep 0.1; done
click run
for _ in $(seq 1 600); do status=$(q get attentionStatus text 2>/dev/null); [[ "$status" == *MoE* ]] && break; sleep 0.1; done
[[ "$status" == *"glm4v_moe, MoE: 8 experts, top-2 + a shared expert"* ]] && pass "the status names the mixture" || fail "the status is '$status'"
# The tab itself must be in sight, not scrolled past the tab bar's end.
read -r tx _ <<<"$(q tab attentionViewTabs 5)"; read -r bx _ bw _ <<<"$(rect attentionViewTabs)"
[ "$tx" -lt $((bx + bw)) ] && pass "the Experts tab is in sight ($tx in $bx+$bw)" || fail "the Experts tab is scrolled out of sight ($tx past $bx+$bw)"
xy=$(q tab attentionViewTabs 5) && xdotool mousemove $xy click 1 && sleep 0.5
if r=$(rect experts); then
  read -r ex ey ew eh <<<"$r"
  xdotool mousemove $((ex + ew / 2)) $((ey + eh / 6)) click 1 && sleep 0.5 # a cell of the top grid (image tokens)
  note=$(q get expertsNote text)
  [[ "$note" == layer*expert* ]] && pass "a click on the Experts grid names its cell ('${note:0:60}...')" || fail "the Experts note after a click is '$note'"
  shot experts
else
  fail "no Experts view after a MoE run"
fi

echo "== ${size}: $failures failed"
[ $failures -eq 0 ]
