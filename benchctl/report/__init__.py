"""The report: charts (time, speedup, roofline, the machine's bandwidth over a run) and the HTML and
Markdown pages. Reads results only; imports no torch."""
