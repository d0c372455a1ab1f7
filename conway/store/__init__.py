"""Files in the home: the layout (`home`), atomic JSON state and the lock (`state`), the append-only
journal (`journal`), what produced a run (`provenance`), and the Agent Skills found there (`skills`).
"""
