"""`conway grounding-check`: instruction → real screenshot → target box, scored without executing anything.

Cases come from a ScreenSpot-format dataset in a local folder (`dataset`) or
from live applications whose accessibility tree gives the targets (`live`);
`check` runs them through the configured policy and writes the report.
"""
