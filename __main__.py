"""``python -m kbwatch``: the same CLI as the ``kbwatch`` console script and run.py."""

from kbwatch.pipeline.cli import main

if __name__ == "__main__":
    main()
