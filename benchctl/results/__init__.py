"""Results: the schema (columns and environment fields, each defined once; the words rows hold are
benchctl/vocab.py's), parquet storage of runs, summaries and the two-run compare. Imports no torch, so
reading results starts fast."""
