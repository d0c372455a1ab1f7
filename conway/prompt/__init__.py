"""What one decision sees: `decision` gathers goals, constitution, memory, action space and the
latest result; `parts` cuts them to the text budget; `memory` keeps memory.md; `summary` asks for
memory's summary (our instruction: `instructions/memory_summary.md`) and checks the answer.
"""
