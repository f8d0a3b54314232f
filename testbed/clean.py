"""``python -m testbed.clean`` (``make clean``): remove the leftovers of our runs, and only those.

A run whose runner is still alive is left alone unless ``--force`` (alias ``--all``).
"""

from __future__ import annotations

import argparse
import sys

from testbed.cleanup import clean_leftovers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.clean", description=__doc__)
    ap.add_argument("--force", "--all", action="store_true", help="also clean runs whose runner is alive")
    ap.add_argument("--run", action="append", dest="runs", metavar="RUNID", help="clean only this run id")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args(argv)
    rep = clean_leftovers(force=args.force, run_ids=args.runs)
    if not args.quiet:
        if rep.empty() and not rep.skipped_live:
            print("clean: nothing of ours left")
        for rid in rep.runs:
            print(f"clean: run {rid}")
        if rep.killed:
            print(f"clean: stopped {len(rep.killed)} processes: {' '.join(map(str, rep.killed))}")
        if rep.namespaces:
            print(f"clean: deleted {len(rep.namespaces)} namespaces")
        for name in rep.links:
            print(f"clean: deleted interface {name}")
        for t in rep.nft_tables:
            print(f"clean: deleted nftables table {t}")
        for rid in rep.bpf:
            print(f"clean: unloaded the BPF programs of run {rid} (/sys/fs/bpf/mt{rid})")
        for rid in rep.ovs:
            print(f"clean: stopped the Open vSwitch of run {rid} and removed its bridges")
        for rid in rep.skipped_live:
            print(f"clean: run {rid} is still running (its runner is alive); use --force to clean it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
