"""The server entry point bench/llama_server.py imports; the stub never serves."""


def main() -> None:
    raise SystemExit("llama_cpp stub: no server (tests/fakes/llama_cpp_stub)")
