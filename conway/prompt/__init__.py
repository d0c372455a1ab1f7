"""What one decision sees: `decision` gathers goals, constitution, memory, action space, host facts and the
latest result; `parts` cuts them to the text budget and says each one's frame; `fence` frames and escapes
them (no content can forge a part); `host_facts` keeps the machine's facts; `memory` keeps memory.md;
`summary` asks for memory's summary (our instruction: `instructions/memory_summary.md`) and checks the answer.
"""
