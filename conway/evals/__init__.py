"""Checks that say whether a setup works and whether a task was really done.

`report` (the shared `conway-report/1` format), `preflight`, `vision_check`,
`acceptance` (acceptance-check) and `task_acceptance` (criteria in task files
for `conway start`). Suite data and documentation live in the top-level
`evals/` folder; this package is the code the `conway` command runs.
"""
