"""Policies: turn a decision context into actions (generic JSON, OpenCUA, UI-TARS, mock).

The output parsers (`parse_opencua`, `parse_uitars`, `parse_json`) are pure
functions of the model's text; they never execute anything the model wrote.
"""
