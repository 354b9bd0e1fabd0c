"""`benchctl bisect`: the first commit of a repository at which a cell got slower, found by `git bisect run`
measuring the cell at each commit (in a benchctl subprocess) and judging it against the good commit's
measurement with the verdict rules of `compare`."""
