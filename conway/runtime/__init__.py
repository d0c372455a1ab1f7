"""Local inference: the memory resolver, endpoint discovery, and starting/stopping a llama.cpp server."""
