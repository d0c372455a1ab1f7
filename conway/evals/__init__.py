"""Checks that say whether a model works and whether a task was really done.

`runner` (cases → policy → records → summary → report → exit code, for every eval command),
`report` (the shared `conway-report/1` format), `vision_check` and `grounding/` (clicks scored
against known targets), `acceptance_check` (disposable file and program tasks through the loop),
`tasks_run` (a suite of tasks, each on its own disposable desktop, scored), `candidates` (a candidate
policy measured against the one it would replace). Suite data and documentation live in the
top-level `evals/` folder; this package is the code the `conway` command runs.
"""
