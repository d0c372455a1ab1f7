"""Demos: the learning demo (`learning_demo`, `--agent` through `agent_demo`) and its button board."""
