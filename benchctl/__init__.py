"""benchctl: correctness, timing, profiles and charts for custom PyTorch operators."""

__version__ = "0.1.0"
