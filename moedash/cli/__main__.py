"""``python -m moedash.cli …`` runs the command line (tests and bench start servers so)."""

from moedash.cli.root import main

raise SystemExit(main())
