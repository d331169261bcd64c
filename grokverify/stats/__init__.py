"""From stored records to a verdict: per-seed metrics, arm samples, each criterion's statistics
(one module per criterion, registered in `grokverify.kinds.CRITERIA`), families and the
verdict rules."""
