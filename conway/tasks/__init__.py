"""Task suites: Conway's own task files and OSWorld-format task JSON, run on a disposable desktop and scored.

Everything about a task lives here, below the commands that run one
(`conway.session.task_run`, `conway.evals.tasks_run`), and never imports
`conway.evals`: the task (`task`; Conway's Markdown task files and their
acceptance criteria in `task_file`), whether it can run here (`runnable`,
`listing`), how it is scored (`evaluate`, `getters`, `metrics/`) and the
facts a report records about where it ran (`facts`).

`env` is the contract between the parts: getters, metrics and setup steps
see a task's machine only through `TaskEnv` (implemented by the sandboxed
desktop in `conway.sandbox`); `cache` is OSWorld's local cache layout.
"""
