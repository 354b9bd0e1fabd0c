"""benchctl: correctness, timing, profiles and charts for custom PyTorch operators."""

from benchctl import triton_env

__version__ = "0.1.0"

triton_env.interpret_without_gpu()  # before anything imports triton: see triton_env.py
