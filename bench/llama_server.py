"""llama-cpp-python's OpenAI-compatible server with llama.cpp's extra buffer types turned off.

Run it with the Python that has `llama-cpp-python[server]` installed (bench/real_model.py
builds one in `.venv-real/`); every argument goes to `python -m llama_cpp.server`:

    .venv-real/bin/python bench/llama_server.py --model MODEL.gguf --model_alias smollm2 \\
        --host 127.0.0.1 --port 8000 --n_ctx 4096

On some CPUs the server crashed on its first request until llama.cpp's extra buffer types
(weight repacking) were off. llama-cpp-python 0.3 has no setting for `use_extra_bufts`, so the
default model parameters are patched before the server loads the model. Keep `--host
127.0.0.1`: the server has no authentication.

`--tiny` (its only own argument; tests/bench/test_bench_tiny.py) starts no server: it applies
the patch, reads the default model parameters back and prints whether extra buffer types are off.
"""

import sys


def patch_default_params() -> None:
    import llama_cpp.llama_cpp as C

    default = C.llama_model_default_params

    def params():  # noqa: ANN202 - llama_cpp's ctypes struct
        p = default()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    C.llama_model_default_params = params


def tiny() -> int:
    import llama_cpp
    import llama_cpp.llama_cpp as C
    from llama_cpp.server.__main__ import main  # noqa: F401 - the server must import

    patch_default_params()
    params = C.llama_model_default_params()
    off = not getattr(params, "use_extra_bufts", False)
    print(f"llama_cpp {llama_cpp.__version__}: the server entry point imports")
    print(f"RESULT llama_server.extra_bufts_off {int(off)} bool target >=1")
    return 0 if off else 1


def main() -> int:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print(
            "bench/llama_server.py needs llama-cpp-python[server]: run it with .venv-real/bin/python"
            " (bench/real_model.py builds that environment)",
            file=sys.stderr,
        )
        return 2
    if sys.argv[1:] == ["--tiny"]:
        return tiny()
    patch_default_params()  # before the server module loads a model with the defaults
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
