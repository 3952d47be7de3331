"""Phase detection, probes, induction-head scores and scaling-law fits."""
