"""Local inference: how much memory a GGUF model needs (`resolver`) and starting/stopping a llama.cpp server (`server`)."""
