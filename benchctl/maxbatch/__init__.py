"""The max-batch search: doubling then bisection over a probe, with real probes that run cells in a
worker under a memory limit. Sits above sweeping, whose worker it drives."""
