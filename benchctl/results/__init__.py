"""Results: the schema (columns and environment fields, each defined once; the words rows hold are
benchctl/vocab.py's), parquet storage of runs, their compaction, and the commit of the measured code.
Imports no torch, so reading results starts fast."""
