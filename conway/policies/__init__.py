"""Policies: turn a decision context into actions.

`base.ModelPolicy` asks a model through a backend (`backends/`) in one model family's language; the families
(`families/`, one folder each: record, adapter, parser, target-turn renderer, prompt files) are registered in
`families/__init__.py`; what they share stays here (`parsed`, `conversation`, `target_turns`, `prompt_files`,
`grammar`, `computer_use`); `mock` is the offline scripted policy.

The output parsers (each family's `parse`) are pure functions of the model's text; they never execute anything
the model wrote.
"""
