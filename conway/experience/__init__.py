"""Experience → data: journal steps as records (`steps`), labels and review, replay, and export to
training formats (`export`, `export_writers`, `conversation`).
"""
