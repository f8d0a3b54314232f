"""Behaviour keys (issue 48, item 5): rows pool only when the code and the scenario that made
them are the same.

A point's id hashes its scenario path and overrides (``experiments.spec.point_id``); a changed
scenario file or changed code would silently join the rows of the old. The behaviour key of a
run closes that: 12 hex digits of

- the **code that decides what a run does**: the git blob of every tracked file under the paths
  every run executes (``COMMON_PATHS``: the router and its core, the endpoint agent and its BPF
  programs, the medium, the orchestrator's bring-up, traffic, summary and validity, the scenario
  model) plus the packages of the routing protocols and extensions the sweep
  names (``protocol_paths``, ``extension_paths``): an edit to DSR does not un-pool a run of static
  routing, an edit to the docs, the tests, the reports or the post-run analysis un-pools nothing;
- the **scenario files** of the point: the sweep's scenario file and every file it extends.

The key is a pure function of a git tree, so the key of a row made at a clean revision is computed
exactly from git history (``relabel``), and a working tree's from its files (git's blob hash of
their contents). A run made from a tree with uncommitted changes (``revision`` ``-dirty``) has no
recoverable key: it gets a key of its own (``UNKNOWN_PREFIX``), never pooled with another row.

This is coarser than a digest of virtual-time replays (which a pure refactor would leave alone):
any change to the files above, behaviour-preserving or not, makes a new key; it never pools rows
of different behaviour, which is the property that matters (docs/experiments.md "Behaviour keys").
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

import yaml

from experiments.spec import Sweep, load_sweep
from nodes.extensions import EXTENSIONS
from nodes.protocols import PROTOCOLS

ROOT: Final = Path(__file__).resolve().parents[1]

COMMON_PATHS: Final = (
    "nodes/__init__.py",
    "nodes/core",
    "nodes/formats",
    "nodes/router",
    "nodes/tcpctl",
    "nodes/protocols/__init__.py",
    "nodes/protocols/profiles.py",
    "nodes/extensions/__init__.py",
    "nodes/extensions/_tcp.py",
    "nodes/extensions/_rto.py",
    "nodes/extensions/neighbour_table.py",
    "medium/src",
    "medium/Cargo.toml",
    "medium/Cargo.lock",
    "testbed",
    "topologies",
)
"""Paths every run executes (directories: every tracked file under them, minus ``EXCLUDED``)."""

EXCLUDED: Final = re.compile(
    r"(\.md$|\.ya?ml$|/__pycache__/|^nodes/core/sim\.py$|"
    r"^testbed/(explain|timeline|staleness|cli|clean|ccallow)\.py$|^testbed/mnwifi/)"
)
"""Not behaviour: documentation, scenario files (hashed per point instead), the unit tests'
network (nodes/core/sim.py), the post-run analysis and CLIs of the orchestrator, and the host's
list of allowed congestion controls (testbed/ccallow.py: a run starts with its control allowed or
fails, nothing in between)."""

UNKNOWN_PREFIX: Final = "u"
"""Key of a row whose code cannot be recovered (a dirty tree, a revision git does not have): ``u``
and 11 hex digits of its run id, unique, so the row pools with nothing."""

BlobMap = dict[str, str]
Reader = Callable[[str], bytes | None]


def protocol_paths(names: Iterable[str]) -> list[str]:
    """The package (or module) of each routing protocol."""
    out = []
    for name in names:
        module = PROTOCOLS[name].replace(".", "/")
        out.append(module + (".py" if name == "static" else ""))
    return out


def extension_paths(names: Iterable[str]) -> list[str]:
    return [EXTENSIONS[n].replace(".", "/") + ".py" for n in names]


def named_in(text: str) -> tuple[list[str], list[str]]:
    """The protocols and extensions whose names appear as words in a sweep's or scenario's text
    (a superset of those its runs load: a name in a comment costs only pooling, never a wrong pool)."""
    words = set(re.findall(r"[A-Za-z0-9_]+", text))
    return sorted(p for p in PROTOCOLS if p in words), sorted(e for e in EXTENSIONS if e in words)


def git_blob_id(data: bytes) -> str:
    """Git's object id of a blob with these contents (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def tree_blobs(root: Path, paths: Sequence[str], rev: str | None = None) -> BlobMap:
    """``path -> blob id`` of the tracked files under ``paths`` (minus ``EXCLUDED``) at ``rev``, or
    in the working tree (its files' contents) when ``rev`` is None."""
    out: BlobMap = {}
    if rev is None:
        for path in _git(root, "ls-files", "-z", "--", *paths).split("\0"):
            if path and not EXCLUDED.search(path) and _under(path, paths):
                f = root / path
                if f.is_file():
                    out[path] = git_blob_id(f.read_bytes())
        return out
    for line in _git(root, "ls-tree", "-r", "-z", rev, "--", *paths).split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        if not EXCLUDED.search(path) and _under(path, paths):
            out[path] = meta.split()[2]
    return out


def scenario_chain(scenario: str, read: Reader) -> list[tuple[str, str]]:
    """``(path, blob id)`` of the scenario file and each file it ``extends`` (in order); a file
    that cannot be read ends the chain with blob ``-``."""
    out: list[tuple[str, str]] = []
    path = PurePosixPath(scenario)
    seen: set[str] = set()
    while str(path) not in seen:
        seen.add(str(path))
        data = read(str(path))
        if data is None:
            out.append((str(path), "-"))
            break
        out.append((str(path), git_blob_id(data)))
        try:
            doc = yaml.safe_load(data)
        except yaml.YAMLError:
            break
        parent = doc.get("extends") if isinstance(doc, dict) else None
        if not isinstance(parent, str):
            break
        path = (
            PurePosixPath(str(path.parent / parent)) if not parent.startswith("/") else PurePosixPath(parent)
        )
    return out


def key_of(code: BlobMap, chain: Sequence[tuple[str, str]]) -> str:
    canon = json.dumps({"code": sorted(code.items()), "scenario": list(chain)}, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()[:12]


def _working_reader(root: Path) -> Reader:
    def read(path: str) -> bytes | None:
        f = root / path
        return f.read_bytes() if f.is_file() else None

    return read


def _rev_reader(root: Path, rev: str) -> Reader:
    def read(path: str) -> bytes | None:
        r = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, check=False)
        return r.stdout if r.returncode == 0 else None

    return read


def sweep_paths(sweep_text: str, chain_texts: Iterable[bytes]) -> list[str]:
    """The code paths of a sweep: ``COMMON_PATHS`` and the protocols and extensions named in the
    sweep file or its scenario chain."""
    text = sweep_text + "\n".join(t.decode("utf-8", "replace") for t in chain_texts)
    protocols, extensions = named_in(text)
    return [*COMMON_PATHS, *protocol_paths(protocols), *extension_paths(extensions)]


def behaviour_key(sweep_text: str, scenario: str, root: Path = ROOT, rev: str | None = None) -> str:
    """The behaviour key of the runs of a sweep (its text: the file, or its model as JSON; only the
    protocol and extension names in it matter) whose scenario is ``scenario``, made from the
    working tree (``rev`` None) or at revision ``rev``."""
    read = _working_reader(root) if rev is None else _rev_reader(root, rev)
    chain = scenario_chain(scenario, read)
    texts = [t for p, _ in chain if (t := read(p)) is not None]
    return key_of(tree_blobs(root, sweep_paths(sweep_text, texts), rev), chain)


def sweep_text(yaml_text: bytes | str) -> str:
    """What of a sweep file the key reads: its document without comments, as JSON (the names of
    the protocols and extensions in it)."""
    return json.dumps(yaml.safe_load(yaml_text), sort_keys=True, default=str)


def _text_of(sweep: Sweep, sweep_file: str | Path | None) -> str:
    if sweep_file is not None and Path(sweep_file).is_file():
        return sweep_text(Path(sweep_file).read_bytes())
    return sweep.model_dump_json()


def sweep_key(sweep: Sweep, sweep_file: str | Path | None = None, root: Path = ROOT) -> str:
    """The key of a sweep's runs made from this working tree now."""
    return behaviour_key(_text_of(sweep, sweep_file), sweep.scenario, root)


def run_key(
    sweep: Sweep, revision: str, run_id: str, sweep_file: str | Path | None = None, root: Path = ROOT
) -> str:
    """The key of a finished run of ``sweep`` from its ``revision`` column: the revision's tree when
    it is clean, this working tree's when it is dirty (a run from uncommitted code here: the code
    on disk, as for a run that recorded no revision), unknown when git here does not have the
    revision (a run on another host)."""
    if not revision or revision.endswith("-dirty"):
        return sweep_key(sweep, sweep_file, root)
    key = _key_at(_text_of(sweep, sweep_file), sweep.scenario, revision, root)
    return key if key is not None else unknown_key(run_id)


@functools.lru_cache(maxsize=256)
def _commit(root: Path, revision: str) -> str | None:
    """The full commit id of ``revision``, None when git here does not have it."""
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        return None


@functools.lru_cache(maxsize=256)
def _key_at(sweep_text: str, scenario: str, revision: str, root: Path) -> str | None:
    full = _commit(root, revision)
    return None if full is None else behaviour_key(sweep_text, scenario, root, full)


def unknown_key(run_id: str) -> str:
    return UNKNOWN_PREFIX + hashlib.sha256(run_id.encode()).hexdigest()[:11]


@functools.lru_cache(maxsize=512)
def key_at_revision(sweep_file: str, revision: str, root: Path = ROOT) -> str | None:
    """The key of a row made at ``revision`` (12 hex, clean) of ``sweep_file``, None when git has
    no such revision or the sweep file did not exist there."""
    full = _commit(root, revision)
    if full is None:
        return None
    text = _rev_reader(root, full)(sweep_file)
    if text is None:  # a sweep file committed after its first runs: its names and scenario now
        text = _working_reader(root)(sweep_file)
    if text is None:
        return None
    doc = yaml.safe_load(text)
    scenario = doc.get("scenario") if isinstance(doc, dict) else None
    if not isinstance(scenario, str):
        return None
    return behaviour_key(sweep_text(text), scenario, root, full)


def row_key(sweep_file: str, revision: str, run_id: str, root: Path = ROOT) -> str:
    """The key of a row from its revision column: exact for a clean revision git has, else unknown."""
    if revision and not revision.endswith("-dirty"):
        key = key_at_revision(sweep_file, revision, root)
        if key is not None:
            return key
    return unknown_key(run_id)


def relabel(
    experiment: str, sweep_file: str, data_dir: Path, root: Path = ROOT, force: bool = False
) -> tuple[int, int]:
    """Fill the empty ``behaviour`` cells of an experiment's rows (every cell with ``force``: after
    the key's definition changed) from their revisions; returns (rows labelled, of them unknown)."""
    from experiments.rows import RowStore

    store = RowStore(experiment, data_dir)
    counts = [0, 0]

    def label(revision: str, run_id: str) -> str:
        key = row_key(sweep_file, revision, run_id, root)
        counts[0] += 1
        counts[1] += key.startswith(UNKNOWN_PREFIX)
        return key

    store.fill_behaviour(label, overwrite=force)
    return counts[0], counts[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.behaviour",
        description="Behaviour keys: print a sweep's current key, or label the rows that have none "
        "from their revisions (docs/experiments.md 'Behaviour keys').",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("key", help="the key of a sweep's runs from this working tree")
    k.add_argument("sweep")
    r = sub.add_parser("relabel", help="fill the behaviour column of experiments' rows from git history")
    r.add_argument(
        "experiments", nargs="+", help="experiment names (their sweep file experiments/sweeps/<name>.yaml)"
    )
    r.add_argument("--data", default="docs/results/data")
    r.add_argument("--sweeps", default="experiments/sweeps")
    r.add_argument(
        "--force", action="store_true", help="label every row again (the key's definition changed)"
    )
    args = ap.parse_args(argv)
    if args.cmd == "key":
        print(sweep_key(load_sweep(args.sweep), args.sweep))
        return 0
    for exp in args.experiments:
        sweep_file = f"{args.sweeps}/{exp}.yaml"
        n, unknown = relabel(exp, sweep_file, Path(args.data), force=args.force)
        print(
            f"{exp}: {n} rows labelled, {unknown} of them unknown (dirty tree or no revision)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
