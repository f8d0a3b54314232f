"""Experiments: sweeps declared as data, aggregation of their results, comparison with the papers.

Issue 2, item 5 (sweeps). ``experiments.sweep`` expands a sweep file (a grid of scenario overrides x
seeds) into run points and runs them, resumably, in parallel and optionally sharded over hosts;
``experiments.aggregate`` turns ``results/<experiment>/`` into CSV; ``experiments.compare`` puts our
numbers beside the papers' (``experiments.papers``). docs/experiments.md is the user's guide.
"""
