#!/usr/bin/env python3
"""kbwatch command line entry: the same CLI as the `kbwatch` console script."""

from kbwatch.pipeline.cli import main

if __name__ == "__main__":
    main()
