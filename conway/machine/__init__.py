"""What Conway knows of the machine it runs on: platform facts (display, session), host facts for doctor and
the prompt, and a private Xvfb for demos, benchmarks and tests. Leaves: they import only other leaves."""
