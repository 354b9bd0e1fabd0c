"""Analysis of stored runs: a run's summary, the two-run compare and its verdicts, baselines, and a cell's
history with its steps. It reads what results/ stores and imports no torch, so reading a run starts fast."""
