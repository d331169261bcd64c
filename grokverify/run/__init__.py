"""Running claims: trials and their store keys, planning, executors, the pipeline."""
