"""This machine: environment facts stamped on every run, the memory bandwidth probe taken beside CPU
measurements, and the stored peaks of `env --calibrate`. Sits below measuring; measures nothing timed."""
