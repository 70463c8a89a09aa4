"""Importers of public benchmarks shipped inside PyPI packages (docs/public-benchmarks.md).

`source` finds a package's files (installed, an unpacked folder, a wheel or an sdist) without
importing or running the package; `bfcl` and `humaneval` turn its data into store benchmarks;
`checks` holds the checkers those benchmarks name (`bench.public.checks:...`, imported from the
repository root like any `module:function` checker). The command is bench/public_import.py.
"""
