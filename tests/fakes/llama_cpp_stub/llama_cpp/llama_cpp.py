"""The one function bench/llama_server.py patches, with the field it turns off."""

from dataclasses import dataclass


@dataclass
class ModelParams:
    use_extra_bufts: bool = True  # llama.cpp's default


def llama_model_default_params() -> ModelParams:
    return ModelParams()
