# What the gui-x11 suites share (sourced by real_input.sh and attention_tab.sh, which set bin, size and suite):
# an Xvfb screen of `size` (the script runs itself again inside xvfb-run), a private home and session, the real
# `ropescope` window started with ROPESCOPE_PRINT_STATE, and helpers that move xdotool's pointer to a named
# control and read back what the window holds (window_state.py).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${ROPESCOPE_X11_INNER:-}" ]; then
  command -v xdotool >/dev/null || { echo "$suite: xdotool is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
  command -v xvfb-run >/dev/null || { echo "$suite: xvfb-run is not installed" >&2; exit 2; }
  ROPESCOPE_X11_INNER=1 exec xvfb-run -a -s "-screen 0 ${size}x24 -nolisten tcp" bash "$0" "$@"
fi

work=$(mktemp -d)
app=
cleanup() {
  [ -n "$app" ] && kill "$app" 2>/dev/null && wait "$app" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home"
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_DATA_HOME=$work/data XDG_RUNTIME_DIR=$work/run
export ROPESCOPE_SESSION_DIR=$work/session ROPESCOPE_PRINT_STATE=$work/state.json QT_QPA_PLATFORM=xcb
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

# q center NAME | q get NAME KEY | q saved KEY | q focus: what the window's state file and autosave hold.
q() { /usr/bin/python3 "$here/window_state.py" "$work/state.json" "$@"; }

# Polls until `q ARGS...` prints EXPECTED (5 s), so a check waits for the 500 ms autosave pause.
expect() {
  local what=$1 expected=$2; shift 2
  local got=""
  for _ in $(seq 1 50); do
    got=$(q "$@" 2>/dev/null)
    [ "$got" = "$expected" ] && { pass "$what ($*: $got)"; return 0; }
    sleep 0.1
  done
  fail "$what: $* is '$got', expected '$expected'"
}

# Holds for 1.5 s: the value must not change (a wheel over an unfocused control).
expect_still() {
  local what=$1 expected=$2; shift 2
  sleep 1.5
  local got; got=$(q "$@" 2>/dev/null)
  [ "$got" = "$expected" ] && pass "$what ($*: $got)" || fail "$what: $* became '$got', expected it to stay '$expected'"
}

# shot NAME: the X screen as $ROPESCOPE_X11_SHOTS/<suite>_<size>_NAME.png, when that folder is set (to look at).
shot() { [ -n "${ROPESCOPE_X11_SHOTS:-}" ] && /usr/bin/python3 "$here/screenshot.py" "$ROPESCOPE_X11_SHOTS/${suite}_${size}_$1.png"; return 0; }

at() { local xy; xy=$(q center "$1") || { fail "no visible control '$1'"; return 1; }; xdotool mousemove $xy; sleep 0.2; }
wheel() { at "$1" && for _ in $(seq 1 "$3"); do xdotool click "$2"; sleep 0.05; done; }
click() { at "$1" && xdotool click 1 && sleep 0.3; }
key() { xdotool key --clearmodifiers "$@"; sleep 0.4; }
menu_undo() { key alt+e; key u; }

# Starts the window and waits until it shows its controls and has written its autosave.
start_window() {
  "$bin" >"$work/app.log" 2>&1 &
  app=$!
  for _ in $(seq 1 600); do
    q center radius >/dev/null 2>&1 && q saved layout >/dev/null 2>&1 && break
    sleep 0.1
  done
  q center radius >/dev/null 2>&1 || { echo "$suite: the window did not come up"; cat "$work/app.log"; exit 1; }
  sleep 1
  echo "== ${size}: window up"
}
