"""llama-cpp-python's OpenAI-compatible server with llama.cpp's extra buffer types turned off.

Run it with the Python that has `llama-cpp-python[server]` installed (bench/real_model.py
builds one in `.venv-real/`); every argument goes to `python -m llama_cpp.server`:

    .venv-real/bin/python bench/llama_server.py --model MODEL.gguf --model_alias smollm2 \\
        --host 127.0.0.1 --port 8000 --n_ctx 4096

On some CPUs the server crashed on its first request until llama.cpp's extra buffer types
(weight repacking) were off. llama-cpp-python 0.3 has no setting for `use_extra_bufts`, so the
default model parameters are patched before the server loads the model. Keep `--host
127.0.0.1`: the server has no authentication.
"""

import sys

import llama_cpp.llama_cpp as C

_default = C.llama_model_default_params


def _params():
    params = _default()
    if hasattr(params, "use_extra_bufts"):
        params.use_extra_bufts = False
    return params


C.llama_model_default_params = _params
from llama_cpp.server.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    main()
