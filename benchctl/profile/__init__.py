"""Profiling one cell's timing loop: py-spy (native frames) and torch.profiler in a child process, and
the collapsed stacks -> top frames and operators, and the flame graph of the same samples."""
