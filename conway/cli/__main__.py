"""`python -m conway.cli`: the `conway` command."""

import sys

from conway.cli.main import main

sys.exit(main())
