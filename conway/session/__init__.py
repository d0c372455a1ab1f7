"""Wiring one run: config → policy, observer, tools, journal → the loop (`app`), and the control commands;
one task in its own home through that loop (`task_run`)."""
