"""Task suites: Conway's own task files and OSWorld-format task JSON, run on a disposable desktop and scored.

`env` is the contract between the parts: getters, metrics and setup steps
see a task's machine only through `TaskEnv` (implemented by the sandboxed
desktop in `conway.sandbox`); `cache` is OSWorld's local cache layout.
"""
