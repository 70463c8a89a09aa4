"""Where seeds and benchmarks are looked up: a `store` folder the caller names, else the built-in
store, whose names are tried too; `writable_store` is where a new seed may be written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app import paths
from app.api_args import expect as _expect
from app.api_args import is_path as _is_path
from app.errors import UserError
from app.harness.workspace.store import benchmark_dir, benchmark_names, seed_dir, seed_names


def _store_argument(store: object) -> Path | None:
    _expect("store", store, _is_path(store, none=True), "a store folder's path or None")
    return paths.absolute(store) if isinstance(store, str | Path) else None


def _store(store: object) -> Path:
    return _store_argument(store) or paths.builtin_store()


def writable_store(store: object) -> Path:
    """Where a new seed goes: `store`, else a checkout's own `store/`; an installed package's
    built-in store is never written (it lives in site-packages)."""
    chosen = _store_argument(store)
    if chosen is not None:
        return chosen
    if paths.checkout_root() is None:
        raise UserError(
            "--store DIR is needed (store= in the API): new seeds are not written into the installed package's "
            "built-in store"
        )
    return paths.builtin_store()


def find_seed(store: Path, name: str) -> Path:
    """A seed from `store`, else the built-in one of that name (sim-starter, real-starter)."""
    return _in_store_or_builtin(seed_dir, "seeds", store, name)


def find_benchmark(store: Path, name: str) -> Path:
    """A benchmark from `store`, else the built-in one of that name."""
    return _in_store_or_builtin(benchmark_dir, "questions", store, name)


def _in_store_or_builtin(
    lookup: Callable[[Path, str], Path], folder: str, store: Path, name: str
) -> Path:
    try:
        return lookup(store, name)
    except UserError as e:  # it names `store`, where the user looked
        builtin = paths.builtin_store()
        if store.resolve() == builtin.resolve():
            raise
        if not (builtin / folder / name).is_dir():  # the built-in names are looked up too
            names = seed_names if folder == "seeds" else benchmark_names
            raise UserError(f"{e}; built-in: {names(builtin)}") from None
        return lookup(builtin, name)
