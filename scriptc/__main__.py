"""`python -m scriptc`: the scriptc command line."""

from scriptc.cli import main

raise SystemExit(main())
