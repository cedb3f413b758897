"""Reads the window's state file (ROPESCOPE_PRINT_STATE) and its autosave for tests/gui_x11/real_input.sh.
  center NAME      the screen point at the middle of a visible control ("x y")
  corner NAME      a point 12 px inside a control's top-left corner
  rect NAME        a visible control's place on the screen ("x y w h")
  shown NAME       where a control draws its picture, in its own coordinates ("x y w h")
  tab NAME I       the screen point at the middle of tab I of a tab bar ("x y"); I a number or the tab's text
  get NAME KEY     a control's field (text, enabled, focus, value, checked), JSON scalars as written
  window           the window's frame on the screen ("x y w h")
  tooltip          the text of the tooltip on the screen (empty when none shows)
  saved KEY        a key of the autosave (what the window would restore)
Exits 1 when the control or key is not there (yet)."""
import json
import sys


def main(state_path, command, *args):
    with open(state_path) as f:
        state = json.load(f)
    widgets = state["widgets"]
    if command in ("center", "corner"):
        w = widgets[args[0]]
        if w["w"] <= 0 or w["h"] <= 0:
            return 1
        if command == "center":
            print(w["x"] + w["w"] // 2, w["y"] + w["h"] // 2)
        else:
            print(w["x"] + 12, w["y"] + 12)
    elif command == "rect":
        w = widgets[args[0]]
        if w["w"] <= 0 or w["h"] <= 0:
            return 1
        print(w["x"], w["y"], w["w"], w["h"])
    elif command == "shown":
        r = widgets[args[0]]["shown"]
        print(r["x"], r["y"], r["w"], r["h"])
    elif command == "tab":
        tabs = widgets[args[0]]["tabs"]
        r = tabs[int(args[1])] if args[1].isdigit() else next(t for t in tabs if t.get("text") == args[1])
        print(r["x"] + r["w"] // 2, r["y"] + r["h"] // 2)
    elif command == "get":
        v = widgets[args[0]][args[1]]
        print(json.dumps(v) if isinstance(v, bool) else v)
    elif command == "saved":
        with open(state["autosave"]) as f:
            v = json.load(f)[args[0]]
        print(("%g" % v) if isinstance(v, float) else v)
    elif command == "window":
        r = state["window"]
        print(r["x"], r["y"], r["w"], r["h"])
    elif command == "tooltip":
        print(state.get("toolTip", ""))
    elif command == "focus":
        print(state["focus"])
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(*sys.argv[1:]))
    except (OSError, KeyError, ValueError, IndexError, StopIteration):
        sys.exit(1)
