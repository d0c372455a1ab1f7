"""Builders: the tiny random-weight VLM for tests (`build_tiny_vlm`) and llama-server (shell scripts)."""
