"""A stand-in for llama-cpp-python: just enough for bench/llama_server.py's `--tiny` check.

tests/bench/test_bench_tiny.py puts it on PYTHONPATH only when no llama_cpp is installed
(llama-cpp-python lives in .venv-real, built by bench/real_model.py)."""

__version__ = "0.0-stub"
