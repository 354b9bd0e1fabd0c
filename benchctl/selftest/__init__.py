"""The GPU self-test (`benchctl selftest`): every GPU feature run once on this machine's GPU, and one
Markdown verdict with the figures. It drives the commands a user would type, in subprocesses, so it tests
what a user gets; on a machine without a GPU it says so in one line and does nothing."""
