"""Operators: their declarations (Operator, Target, Implementation, Case), the values their params take
(param_rules.py), the registry and the loading of operator files (built-in and --ops-dir), the cell spec
and its resolution, custom-op registration, the declared, cached build of their C++/CUDA extensions, and
what each CUDA kernel (resources.py) and each Triton kernel (triton_resources.py) asks of an SM.
Everything above takes operators from here."""
