"""Results: the schema (columns and environment fields, each defined once; the words rows hold are
benchctl/vocab.py's), parquet storage of runs, their compaction, the commit of the measured code, and a
row's params as people read them. Imports no torch, so reading results starts fast."""
