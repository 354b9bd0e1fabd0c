"""Results: the schema (columns, statuses, passes, environment fields, each defined once), parquet
storage of runs, summaries and the two-run compare. Imports no torch, so reading results starts fast."""
