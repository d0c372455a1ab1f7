"""Policies: turn a decision context into actions (generic JSON, OpenCUA, UI-TARS, mock).

The model families, and every default that differs between them, are declared in `families/`
(one module each); the adapters beside it are their answer formats.

The output parsers (`parse_opencua`, `parse_uitars`, `parse_json`) are pure
functions of the model's text; they never execute anything the model wrote.
"""
