"""Sweeping: what the user asked for (configs, flags -> cells), the preflight (availability, builds), the
session (executors, the worker process, interleaved rounds, writing rows as cells finish)."""
