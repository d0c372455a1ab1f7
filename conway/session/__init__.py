"""Wiring one run: config → policy, observer, tools, journal → the loop (`app`), and the control commands."""
