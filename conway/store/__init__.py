"""Files in the home: the layout (`home`), atomic JSON state and the lock (`state`), the append-only
journal (`journal`), what produced a run (`provenance`), the Agent Skills found there (`skills`), and
the one `fsync_dir` that makes a new or renamed file's name durable (`durable`).
"""
