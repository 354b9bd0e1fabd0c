"""Operators: their declarations (Operator, Target, Implementation, Case), the registry and the loading
of operator files (built-in and --ops-dir), the cell spec and its resolution, custom-op registration,
the declared, cached build of their C++/CUDA extensions, and what each built CUDA kernel asks of an SM
(resources.py). Everything above takes operators from here."""
