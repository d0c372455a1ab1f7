"""What every `conway` command's arguments share, below the command line that assembles them.

`command`: a command's piece (its name, the function that adds its parser, the one that runs it) and the argument
groups several commands take; `pool`: the worker-pool flags; `resolve`: parsed arguments to the home, the
configuration and the worker pool. `conway.cli` builds the parser from these pieces, and an eval suite declares its
own command here-shaped in its module (`conway.evals.suites`), since `conway.evals` never imports `conway.cli`.
"""
