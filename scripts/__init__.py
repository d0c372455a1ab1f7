"""Scripts run from the repository root as modules (`python -m scripts.bench.bench_loop`):
`bench/` measurements, `demos/` the learning and agent demos, `build/` the tiny VLM and llama-server,
`reliability/` the kill -9, soak and fuzz proofs.
"""
