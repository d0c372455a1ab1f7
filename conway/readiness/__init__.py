"""Readiness: the checks (`readiness.checks`) and the three commands that select and render them.

`doctor` (the machine), `preflight` (the home and the model, a report) and
`probe` (one decision on a synthetic image). The checks know no command and no
report; the commands sit above them.
"""
