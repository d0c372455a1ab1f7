"""The reliability proofs behind scripts/prove_reliability.py (one module per proof)."""
