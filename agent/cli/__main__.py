"""`python -m agent.cli` is `rocport` (for tests and machines without the console script on PATH)."""

from agent.cli import main

main()
