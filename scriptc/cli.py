"""The `scriptc` command line."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from scriptc import __version__

    parser = argparse.ArgumentParser(prog="scriptc", description="scriptc: compile, inspect, run and serve models")
    parser.add_argument("--version", action="version", version=f"scriptc {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    return 0
