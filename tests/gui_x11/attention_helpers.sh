# The Attention tab's helpers the gui-x11 suites share (sourced after x11_session.sh by attention_tab.sh and
# after_moe.sh): a control's place, waiting for a run, a model folder typed into the file dialog, and checks that
# rectangles ("x y w h") lie inside or clear of each other.
# "x y w h" of a control, or of where it draws its picture.
rect() { q rect "$1"; }
# Waits (60 s) until the tab has no run or load under way: an answer shown and a status that is not "...".
settle() {
  local status
  for _ in $(seq 1 600); do
    status=$(q get attentionStatus text 2>/dev/null)
    if [ -n "$status" ] && [[ "$status" != *"..."* ]] && [ -n "$(q get answer text 2>/dev/null)" ]; then
      sleep 0.5
      return 0
    fi
    sleep 0.1
  done
  fail "the Attention tab did not settle: status '$status'"
}
# A path typed into the file dialog that is opening (Qt's own: its file name field), then accepted. An open
# dialog's path is an existing folder, whose completer list opens (Escape closes it); "save" names a new file: none.
dialog_path() {
  for _ in $(seq 1 50); do q center fileNameEdit >/dev/null 2>&1 && break; sleep 0.1; done
  click fileNameEdit
  key ctrl+a
  xdotool type --delay 15 "$1"
  sleep 0.5
  [ "${2:-}" = save ] || key Escape # the completer's list, if it opened, not the dialog
  q center fileNameEdit >/dev/null 2>&1 || { fail "the file dialog closed on Escape"; return 1; }
  key Return
  for _ in $(seq 1 50); do q center fileNameEdit >/dev/null 2>&1 || break; sleep 0.1; done
}
# Model... and a folder typed into the file dialog.
open_model() { click openModel && dialog_path "$1"; }
# Whether rectangle A ("x y w h") lies inside B, and whether two rectangles overlap.
inside() { read -r ax ay aw ah <<<"$1"; read -r bx by bw bh <<<"$2"; [ "$ax" -ge "$bx" ] && [ $((ax + aw)) -le $((bx + bw)) ] && [ "$ay" -ge "$by" ] && [ $((ay + ah)) -le $((by + bh)) ]; }
inside_x() { read -r ax _ aw _ <<<"$1"; read -r bx _ bw _ <<<"$2"; [ "$ax" -ge "$bx" ] && [ $((ax + aw)) -le $((bx + bw)) ]; }
overlap() { read -r ax ay aw ah <<<"$1"; read -r bx by bw bh <<<"$2"; [ "$ax" -lt $((bx + bw)) ] && [ "$bx" -lt $((ax + aw)) ] && [ "$ay" -lt $((by + bh)) ] && [ "$by" -lt $((ay + ah)) ]; }

# Every button of the side column lies inside the column (its visible part, the scroll area).
column_whole() {
  local what=$1 column name r
  column=$(rect attentionControls) || { fail "$what: no side column"; return; }
  for name in openModel openImage addImage question run answer; do
    r=$(rect "$name") || { fail "$what: no visible '$name'"; continue; }
    inside_x "$r" "$column" && pass "$what: $name inside the column ($r in $column)" || fail "$what: $name ($r) reaches past the column ($column)"
  done
}
# The map shows the whole picture, scaled to fit: drawn inside the control, touching two of its sides.
map_whole() {
  local what=$1 m s
  m=$(rect attentionMap) || { fail "$what: no visible map"; return; }
  s=$(q shown attentionMap) || { fail "$what: the map shows no picture"; return; }
  read -r _ _ mw mh <<<"$m"; read -r sx sy sw sh <<<"$s"
  if inside "$s" "0 0 $mw $mh" && { [ "$sw" -ge $((mw - 1)) ] || [ "$sh" -ge $((mh - 1)) ]; }; then
    pass "$what: the map's picture ($s) fits its ${mw}x${mh} view"
  else
    fail "$what: the map's picture ($s) does not fit its ${mw}x${mh} view (cut, or not scaled to it)"
  fi
}

