"""Helper run in a subprocess (AT-SPI calls can block): print, as JSON, the text of the first terminal found
in the accessibility tree of the session bus in DBUS_SESSION_BUS_ADDRESS; {"text": null} when there is none."""

from __future__ import annotations

import json
import sys


def main() -> int:
    try:
        import gi
        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError) as exc:
        print(json.dumps({"text": None, "reason": f"AT-SPI unavailable: {exc}"}))
        return 0
    desktop = Atspi.get_desktop(0)
    stack = [(desktop.get_child_at_index(i), 0) for i in range(desktop.get_child_count())]
    while stack:
        node, depth = stack.pop(0)  # breadth first: the terminal widget sits a few levels down
        if node is None or depth > 30:
            continue
        try:
            if node.get_role() == Atspi.Role.TERMINAL:
                text = node.get_text_iface()
                if text is not None:
                    print(json.dumps({"text": text.get_text(0, text.get_character_count())}))
                    return 0
            stack.extend((node.get_child_at_index(i), depth + 1) for i in range(node.get_child_count()))
        except Exception:  # a node that went away mid-walk (GLib.Error): skip it
            continue
    print(json.dumps({"text": None, "reason": "no terminal in the accessibility tree"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
