"""The loop: one cycle at a time (`cycle.Loop`), and what it leans on.

`parts` (its inputs and result), `control` (stop, pause, signals, budgets, sliced waits),
`recovery` (start-up after a crash), `run_state` (state.json of a running session),
`repetition` (suppressing repeated actions), `ratelimit` (HTTP 429 waits), `memory_upkeep`
(compacting memory.md between cycles).
Nothing here knows the command line; the semantics are in docs/architecture.md.
"""
