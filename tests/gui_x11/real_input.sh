#!/usr/bin/env bash
# The window under real X input (issue 45): an Xvfb screen, the real `ropescope` window, and xdotool's X
# events (wheel, clicks, keys), which take paths QTest's synthetic events skip (Qt gives a wheel-focus
# control the focus before any event filter sees a spontaneous wheel event; shortcut overrides). Every check
# reads back what the window then holds: the autosave (what a restart would restore) and the controls
# (ROPESCOPE_PRINT_STATE: each named control's place, focus, enabled state and shown value).
#   tests/gui_x11/real_input.sh ROPESCOPE_BINARY [WxH]    (ctest label gui-x11; needs Xvfb and xdotool)
set -uo pipefail
bin=$1
size=${2:-1280x720}
suite=real_input
# shellcheck source=tests/gui_x11/x11_session.sh
source "$(dirname "$0")/x11_session.sh"
start_window

layout0=$(q saved layout); radius0=$(q saved radius); scheme0=$(q saved scheme)

# 1. The wheel over unfocused controls changes nothing (before: R 10 -> 9.5, circle -> vrope, Grid H 6 -> 5).
click ptdReadout # focus away from every control
wheel radius 5 3; expect_still "wheel over unfocused R" "$radius0" saved radius
wheel scheme 5 3; expect_still "wheel over the unfocused scheme list" "$scheme0" saved scheme
wheel rows 5 3; expect_still "wheel over unfocused Grid H" "$layout0" saved layout
wheel alpha 4 3; expect_still "wheel over the unfocused alpha slider" "$(q saved alpha)" saved alpha

# 2. Focused, the wheel edits: a click gives R the focus, one notch up is one step (0.5).
click radius
wheel radius 4 1
expect "wheel over focused R" "10.5" saved radius

# 3. Ctrl+Z / Ctrl+Shift+Z from the spin box are the window's Undo and Redo (before: the spin box's own undo).
key ctrl+z; expect "Ctrl+Z in the focused spin box undoes" "$radius0" saved radius
key ctrl+shift+z; expect "Ctrl+Shift+Z in the focused spin box redoes" "10.5" saved radius

# 4. From the scene (a corner of the view, where no token is picked).
xy=$(q corner scene) && xdotool mousemove $xy click 1 && sleep 0.3
key ctrl+z; expect "Ctrl+Z from the scene undoes" "$radius0" saved radius
key ctrl+shift+z; expect "Ctrl+Shift+Z from the scene redoes (before: ambiguous, dead)" "10.5" saved radius
key ctrl+z; expect "Ctrl+Z from the scene again" "$radius0" saved radius

# 5. Undo while the layout field has the focus: the field shows the layout undone to, and Enter keeps it.
click layout
key ctrl+a; xdotool type --delay 20 "text:2,image:3x3,text:2"; key Return
expect "a typed layout applies" "text:2,image:3x3,text:2" saved layout
key ctrl+z
expect "Ctrl+Z in the layout field, its text applied, is the window's Undo (before: the field's own undo took it)" "$layout0" saved layout
expect "the focused field shows the undone layout (before: the stale text)" "$layout0" get layout text
key Return
expect_still "Enter in the field keeps the undone layout" "$layout0" saved layout
# A change made elsewhere, then Ctrl+Z with the focus in the layout field: the window's Undo, not the field's.
click radius
wheel radius 4 1
expect "R stepped up again" "10.5" saved radius
click layout
key ctrl+z
expect "Ctrl+Z in the layout field undoes the last change made elsewhere" "$radius0" saved radius
expect "the layout field still shows the layout" "$layout0" get layout text

# 6. The structured editor after an undo shows the layout undone to, and editing it starts from there.
click layout
key ctrl+a; xdotool type --delay 20 "text:5,video:4x6x6,text:6"; key Return
expect "a video layout applies" "text:5,video:4x6x6,text:6" saved layout
menu_undo
expect "undo back from the video" "$layout0" saved layout
expect "Grid H after the undo" "8" get rows text
expect "frames after the undo (before: 4)" "1" get frames text
click textBefore
wheel textBefore 4 1
expect "text before + after the undo edits the undone layout (before: the video came back)" "text:5,image:8x8,text:6" saved layout
# Two images of different sizes: the grid editor cannot show it, so it is disabled instead of stale.
click layout
key ctrl+a; xdotool type --delay 20 "text:2,image:3x4,text:1,image:5x5,text:2"; key Return
expect "a two-image layout applies" "text:2,image:3x4,text:1,image:5x5,text:2" saved layout
expect "the grid editor is off for it (before: 'images 1, 8x8')" "false" get rows enabled

# 7. Seconds per grid under "Video time" is the value the state takes (before: a second, table-built box under
# "2025 schemes" overrode it), and it is enabled only under the Qwen2.5-VL time index.
click scheme; key Home; key Down; key Down; key Return
expect "the scheme list's third entry is mrope" "mrope" saved scheme
# The dock scrolls (the wheel over its left margin, beside the form's labels) until Video time is in view.
read -r dx dy <<<"$(q corner parametersDock)"
xdotool mousemove $((dx - 8)) $((dy + 300)); for _ in $(seq 1 25); do xdotool click 5; sleep 0.03; done; sleep 0.5
expect "spg is off under Qwen2-VL's frame index" "false" get secondPerGrid enabled
click temporal; key Down; key Return
expect "Video time: Qwen2.5-VL" "qwen25vl" saved temporal
expect "spg is on under Qwen2.5-VL's seconds" "true" get secondPerGrid enabled
click secondPerGrid; key ctrl+a; xdotool type --delay 20 "3"; key Return
expect "spg typed under Video time is the state's (before: 1, the hidden box's)" "3" saved second_per_grid

echo "== ${size}: $failures failed"
[ $failures -eq 0 ]
