"""Measuring one cell: clocks and the timing loop, the three passes, peak memory, the correctness gate
against the float64 reference, running one cell into rows, `check`'s suite and the peak calibration."""
