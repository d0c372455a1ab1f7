"""Tools: each executes some action types and says whether it can run here."""
