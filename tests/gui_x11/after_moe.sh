#!/usr/bin/env bash
# The window after a mixture-of-experts run (issue 72 §1), under real X input: the tiny GLM-4.5V loaded through the
# file dialog and run, then each check read back from the controls' places (ROPESCOPE_PRINT_STATE) and the files written.
#   1. The side column stays beside the map: the map, the Experts tab and its Export... are not under it.
#   2. The window stays on the screen, also when the Readouts are hidden and shown again (at 1000x650 they share the
#      left column with the Parameters as a tab). The side column scrolls under the wheel, its controls untouched.
#   5. An export records the run (not the status line's export or error) and leaves the run's line on screen.
#   6. The map's PNG is large enough to read; SVG and PDF figures get a .json sidecar, a PDF a title naming its figure.
#   9. A click on the Experts grid does not move the grid; the status line says ms below a second.
#   3. After a failed run (a tokenizer whose image token is not the config's), nothing of the previous run stays.
#   4. Question and Run stay where they were when that error appears.
#   9. The error is whole in the status bar too: elided with the whole in its tooltip where it does not fit.
#   7. Check position ids: Browse... for a model folder switches the rule to it.
#   9. A restart comes back on the Attention tab, which the user left.
#   tests/gui_x11/after_moe.sh ROPESCOPE_BINARY TEST_DATA [WxH]    (ctest label gui-x11; Xvfb and xdotool; 1280x720,
#   1920x1080 and 1000x650)
set -uo pipefail
bin=$1
data=$2
size=${3:-1280x720}
suite=after_moe
# shellcheck source=tests/gui_x11/x11_session.sh
source "$(dirname "$0")/x11_session.sh"
# shellcheck source=tests/gui_x11/attention_helpers.sh
source "$(dirname "$0")/attention_helpers.sh"
fig() { /usr/bin/python3 "$here/figure_info.py" "$@"; }
screen_w=${size%x*}

# The MoE model folder as tests/support/model_folder.h makes it, and one with another family's tokenizer (its image
# token is not the config's: the model loads, its run fails). Same name length: the Model line wraps alike.
mkdir -p "$work/glm-moe" "$work/glm-bad" "$work/out"
cp "$data/fixtures/glm4vmoe-tiny/config.json" "$data/fixtures/glm4vmoe-tiny/model.safetensors" "$work/glm-moe/"
cp "$data/attend/glm_tokenizer.json" "$work/glm-moe/tokenizer.json"
cp "$work/glm-moe/config.json" "$work/glm-moe/model.safetensors" "$work/glm-bad/"
cp "$data/attend/tokenizer.json" "$work/glm-bad/tokenizer.json"
# A folder at a long path whose config is refused ("norm_topk_prob": "no"): an error wider than the status bar.
long=$work/$(printf 'a-model-folder-nested-deep-%.0s' 1 2 3 4 5)/$(printf 'whose-config-says-no-for-a-flag-%.0s' 1 2 3 4 5)
mkdir -p "$long"
cp "$work/glm-moe/model.safetensors" "$work/glm-moe/tokenizer.json" "$long/"
sed 's/"norm_topk_prob": true/"norm_topk_prob": "no"/' "$work/glm-moe/config.json" >"$long/config.json"
grep -q '"norm_topk_prob": "no"' "$long/config.json" || { echo "after_moe: the fixture's config has no norm_topk_prob to change"; exit 1; }

start_window
xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.5
settle
# 9. The bundled model's load at start-up and its answer, each in ms below a second ("0.0 s" said nothing).
first=$(q get attentionStatus text | head -1)
if [[ "$first" =~ ^loaded\ mrope\ in\ ([0-9]+\ ms|[1-9][0-9]*\.[0-9]\ s),\ answered\ in\ ([0-9]+\ ms|[1-9][0-9]*\.[0-9]\ s)$ ]]; then
  pass "the first run says the start-up load and its time ('$first')"
else
  fail "the first run's status is '$first' (no load time, or a time under a second in s)"
fi

open_model "$work/glm-moe"
for _ in $(seq 1 600); do status=$(q get attentionStatus text 2>/dev/null); [[ "$status" == *MoE* ]] && break; sleep 0.1; done
[[ "$status" == "loaded glm-moe in "*", answered in "* ]] && pass "the MoE run says its load and answer times" || fail "the status after the MoE run is '$status'"
sleep 1
shot after_moe

# "x width" of the main window, as X has it (Xvfb runs no window manager: no frame).
window_x_w() {
  local id; id=$(xdotool search --onlyvisible --name '^RopeScope' 2>/dev/null | head -1)
  [ -n "$id" ] && xdotool getwindowgeometry --shell "$id" | awk -F= '/^X=/{x=$2} /^WIDTH=/{w=$2} END{print x, w}'
}
window_fits() { # 2. the window inside the screen's width
  local wx w; read -r wx w <<<"$(window_x_w)"
  [ -n "$w" ] || { fail "$1: no RopeScope window found"; return; }
  [ $((wx + w)) -le "$screen_w" ] && pass "$1: the window ($wx+$w) fits the ${screen_w} px screen" || fail "$1: the window ($wx+$w px) runs past the ${screen_w} px screen"
}
# 1. The views and the map lie left of the side column, which ends on the screen.
beside_column() {
  local what=$1 c cx v
  c=$(rect attentionControls); read -r cx _ cw _ <<<"$c"
  [ $((cx + cw)) -le "$screen_w" ] && pass "$what: the side column ends on the screen ($((cx + cw)))" || fail "$what: the side column ($c) runs off the ${screen_w} px screen"
  for name in attentionViews attentionMap; do
    v=$(rect "$name") || { fail "$what: no visible $name"; continue; }
    read -r vx _ vw _ <<<"$v"
    [ $((vx + vw)) -le "$cx" ] && pass "$what: $name ends at $((vx + vw)), left of the column at $cx" || fail "$what: $name ($v) reaches under the column at $cx"
  done
  map_whole "$what"
}
window_fits "after the MoE run"
# A window past the screen held to it, as a window manager does: below its minimum size Qt lays the widgets over each
# other (the side column over the map).
read -r wx w <<<"$(window_x_w)"
if [ $((wx + w)) -gt "$screen_w" ]; then
  id=$(xdotool search --onlyvisible --name '^RopeScope' | head -1)
  xdotool windowmove "$id" 0 0 windowsize "$id" "$screen_w" "${size#*x}" && sleep 1
fi
beside_column "after the MoE run"
read -r bx _ bw _ <<<"$(rect attentionViewTabs)"
for i in 0 1 2 3 4 5; do
  read -r tx _ <<<"$(q tab attentionViewTabs $i)"
  [ "$tx" -lt $((bx + bw)) ] || fail "view tab $i (centre $tx) lies past the tab bar's end ($((bx + bw)))"
done
xy=$(q tab attentionViewTabs 5) && xdotool mousemove $xy click 1 && sleep 0.5
e=$(rect exportExperts) && v=$(rect attentionViews) && inside "$e" "$v" && pass "Experts' Export... ($e) inside the views ($v)" || fail "Experts' Export... (${e:-none}) not inside the views (${v:-none})"

# 9. A click on a cell: the note names it, the grid stays where it was.
g0=$(rect experts)
read -r ex ey ew eh <<<"$g0"
xdotool mousemove $((ex + ew / 2)) $((ey + eh / 6)) click 1 && sleep 0.6
[[ "$(q get expertsNote text)" == layer*expert* ]] && pass "the click named its cell" || fail "no cell named after the click: '$(q get expertsNote text)'"
[ "$(rect experts)" = "$g0" ] && pass "the Experts grid stayed at $g0" || fail "the Experts grid moved from $g0 to $(rect experts) on a click"
shot experts

# The side column under the wheel: it scrolls to its status line, which a short screen leaves below the fold, and the
# slider and combo boxes the pointer passes over keep their values (unfocused, they leave the wheel to the column).
xy=$(q tab attentionViewTabs 0) && xdotool mousemove $xy click 1 && sleep 0.4
layer0=$(q get attentionLayer value); head0=$(q get head text); qa=$(rect question)
read -r cx cy cw ch <<<"$(rect attentionControls)"
xdotool mousemove $((cx + cw / 2)) $((cy + ch / 2))
xdotool click --repeat 25 --delay 40 5
sleep 0.5
read -r _ sy _ sh <<<"$(rect attentionStatus)"
[ "$sy" -ge "$cy" ] && [ $((sy + sh)) -le $((cy + ch)) ] && pass "the wheel scrolls the column to its status line ($sy+$sh in $cy+$ch)" || fail "after the wheel the status line ($sy+$sh) is not in the column ($cy+$ch)"
[ "$(q get attentionLayer value)" = "$layer0" ] && [ "$(q get head text)" = "$head0" ] && pass "the wheel left Layer ($layer0) and Head ($head0) alone" || fail "the wheel changed Layer to $(q get attentionLayer value) or Head to $(q get head text)"
shot wheel_column
xdotool click --repeat 30 --delay 40 4
sleep 0.5
[ "$(rect question)" = "$qa" ] && pass "the wheel scrolls the column back (Question at $qa)" || fail "Question is at $(rect question) after scrolling back, not $qa"

# 2. Readouts hidden and shown again: the window keeps its width.
read -r _ w0 <<<"$(window_x_w)"
for want in hidden shown; do
  xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.3
  key ctrl+shift+r
  sleep 1
  read -r _ w <<<"$(window_x_w)"
  [ "$w" = "$w0" ] && pass "Readouts $want: the window stays $w0 px wide" || fail "Readouts $want: the window went from $w0 to $w px"
done
r=$(rect readoutsDock) && read -r rx _ rw _ <<<"$r" && [ $((rx + rw)) -le "$screen_w" ] && pass "Readouts shown again: on the screen ($r)" || fail "Readouts shown again: not on the screen (${r:-hidden})"
# Where Parameters and Readouts share the left column (1000x650), a click on either's tab shows that dock there.
if q tab dockTabs Parameters >/dev/null 2>&1; then
  for want in Parameters Readouts; do
    dock=$([ $want = Parameters ] && echo parametersDock || echo readoutsDock)
    xy=$(q tab dockTabs $want) && xdotool mousemove $xy click 1 && sleep 0.5
    r=$(rect $dock) && read -r rx _ rw _ <<<"$r" && [ $((rx + rw)) -le "$(read -r cx _ <<<"$(rect attentionControls)"; echo "$cx")" ] &&
      [ "$(q get dockTabs current)" = "$([ $want = Parameters ] && echo 0 || echo 1)" ] &&
      pass "a click on the $want tab shows $want left of the Attention tab ($r)" || fail "a click on the $want tab: $dock is at '${r:-hidden}', tab $(q get dockTabs current) in front"
  done
  shot readouts_tab
fi
xy=$(q tab attentionViewTabs 0) && xdotool mousemove $xy click 1 && sleep 0.4
window_fits "Readouts shown again"
beside_column "Readouts shown again"

# 5, 6. Exports through the real buttons and file dialog: the run recorded, the run's line still on screen.
run_line=$(q get attentionStatus text)
xy=$(q tab attentionViewTabs 0) && xdotool mousemove $xy click 1 && sleep 0.4
click exportMap && dialog_path "$work/out/attention.png" save
for _ in $(seq 1 30); do [ -f "$work/out/attention.png" ] && break; sleep 0.1; done
read -r pw _ <<<"$(fig size "$work/out/attention.png")"
[ "${pw:-0}" -ge 720 ] && pass "attention.png is $pw px wide" || fail "attention.png is ${pw:-no} px wide (under 720)"
[ "$(fig meta "$work/out/attention.png" run)" = "$run_line" ] && pass "attention.png records the run" || fail "attention.png records the run '$(fig meta "$work/out/attention.png" run)', not '$run_line'"
[ "$(q get attentionStatus text)" = "$run_line" ] && pass "the run's line stays after an export" || fail "an export replaced the run's line with '$(q get attentionStatus text)'"
click exportMap && dialog_path "$work/out/again.png" save # after an export: the status said "Exported ..."
for _ in $(seq 1 30); do [ -f "$work/out/again.png" ] && break; sleep 0.1; done
[ "$(fig meta "$work/out/again.png" run)" = "$run_line" ] && pass "a second export records the run" || fail "a second export records the run '$(fig meta "$work/out/again.png" run)'"
xy=$(q tab attentionViewTabs 1) && xdotool mousemove $xy click 1 && sleep 0.4
click exportLayerHeads && dialog_path "$work/out/layers_heads.svg" save
for _ in $(seq 1 30); do [ -f "$work/out/layers_heads.svg.json" ] && break; sleep 0.1; done
[ "$(fig meta "$work/out/layers_heads.svg" run)" = "$run_line" ] && pass "layers_heads.svg's sidecar records the run" || fail "layers_heads.svg: no sidecar with the run ('$(fig meta "$work/out/layers_heads.svg" run)')"
xy=$(q tab attentionViewTabs 3) && xdotool mousemove $xy click 1 && sleep 0.4
click exportRegion && dialog_path "$work/out/region.pdf" save
for _ in $(seq 1 30); do [ -f "$work/out/region.pdf.json" ] && break; sleep 0.1; done
[ "$(fig title "$work/out/region.pdf")" = "RopeScope image region" ] && pass "region.pdf's title names its figure" || fail "region.pdf's title is '$(fig title "$work/out/region.pdf")'"
[ "$(fig meta "$work/out/region.pdf" question)" = "$(q get question text)" ] && pass "region.pdf's sidecar records the question" || fail "region.pdf: no sidecar with the question"

# 3, 4. A run that fails: the error below Run, Question and Run where they were, nothing of the MoE run left.
q0=$(rect question); r0=$(rect run)
xy=$(q tab attentionViewTabs 0) && xdotool mousemove $xy click 1 && sleep 0.3
open_model "$work/glm-bad"
for _ in $(seq 1 300); do [ -n "$(q get attentionError text 2>/dev/null)" ] && break; sleep 0.1; done
sleep 0.5
shot failed_run
[ -n "$(q get attentionError text)" ] && pass "the error shows ('$(q get attentionError text | head -c 70)...')" || fail "no error after a run with another family's tokenizer"
[ "$(rect question)" = "$q0" ] && [ "$(rect run)" = "$r0" ] && pass "Question and Run stayed at $q0 / $r0" || fail "Question/Run moved from $q0 / $r0 to $(rect question) / $(rect run)"
[ -z "$(q get answer text)" ] && pass "no answer left" || fail "the answer '$(q get answer text)' stayed"
[ -z "$(q get mapTokens text)" ] && pass "\"Map of\" lists no tokens" || fail "\"Map of\" still lists '$(q get mapTokens text | head -c 80)'"
[[ "$(q get attentionStatus text)" != *answered* ]] && pass "the status no longer says the MoE run" || fail "the status still says '$(q get attentionStatus text | head -1)'"

# 9. The error in the window's status bar is not cut at its edge: drawn whole where it fits, else elided in its middle
# ("...") with the whole message in the bar's tooltip, which the pointer resting on the bar shows. A folder whose
# config is refused, at a path longer than any screen is wide (the message names config.json by its path).
open_model "$long"
for _ in $(seq 1 300); do [[ "$(q get attentionError text 2>/dev/null)" == *norm_topk_prob* ]] && break; sleep 0.1; done
sleep 0.5
shot long_error
err=$(q get attentionError text)
[[ "$err" == *"$long/config.json"* ]] && pass "the refused config's error names its path" || fail "the error after a refused config is '${err:0:100}'"
[ "$(rect question)" = "$q0" ] && [ "$(rect run)" = "$r0" ] && pass "a long error leaves Question and Run at $q0 / $r0" || fail "a long error moved Question/Run to $(rect question) / $(rect run)"
column_whole "a long error"
[ -n "$err" ] && [ "$(q get statusBar text)" = "$err" ] && pass "the status bar holds the error" || fail "the status bar holds '$(q get statusBar text | head -c 80)', not the error"
drawn=$(q get statusBar drawn)
if [ -n "$err" ] && [ "$drawn" = "$err" ]; then
  pass "the status bar draws the whole error (it fits at ${size})"
else
  [[ "$drawn" == *…* ]] && pass "the status bar elides the error ('$drawn')" || fail "the status bar cuts the error without a mark: '$drawn'"
  [ "$(q get statusBar toolTip)" = "$err" ] && pass "the status bar's tooltip holds the whole error" || fail "the status bar's tooltip is '$(q get statusBar toolTip | head -c 80)'"
  read -r sx sy sw sh <<<"$(rect statusBar)"
  # A click on the bar first: without a window manager the closed file dialog leaves no window active, and Qt shows
  # tooltips in the active window only.
  xdotool mousemove $((sx + sw / 3)) $((sy + sh / 2)) click 1 && sleep 0.3 && xdotool mousemove_relative 4 0
  for _ in $(seq 1 30); do [ -n "$(q tooltip)" ] && break; sleep 0.1; done
  shot status_tooltip
  [ "$(q tooltip)" = "$err" ] && pass "the pointer on the status bar shows the whole error" || fail "the pointer on the status bar shows '$(q tooltip | head -c 80)'"
  xdotool mousemove 5 5
fi

# 7. File > Check position ids...: Browse... for a model folder switches the rule to that folder's.
xy=$(q tab mainTabs 1) && xdotool mousemove $xy click 1 && sleep 0.3 # the window has the keyboard, not the closed file dialog
key alt+f; key c
for _ in $(seq 1 30); do q center checkBrowseModel >/dev/null 2>&1 && break; sleep 0.1; done
click checkBrowseModel && dialog_path "$work/glm-moe"
sleep 0.3
[ "$(q get checkFamily text)" = "from a model folder" ] && [ "$(q get checkModel enabled)" = true ] &&
  pass "Browse... switched the rule to the model folder" || fail "after Browse... the rule is '$(q get checkFamily text)', the folder field enabled: $(q get checkModel enabled)"
key Escape

# 9. A restart comes back on the tab left (the Attention tab).
kill "$app" && wait "$app" 2>/dev/null
rm -f "$work/state.json"
"$bin" >"$work/app.log" 2>&1 &
app=$!
for _ in $(seq 1 300); do q tab mainTabs 1 >/dev/null 2>&1 && break; sleep 0.1; done
sleep 1
[ "$(q get mainTabs current)" = 1 ] && pass "the restart shows the Attention tab" || fail "the restart shows tab $(q get mainTabs current), not the Attention tab left"

echo "== ${size}: $failures failed"
[ $failures -eq 0 ]
