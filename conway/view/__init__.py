"""`conway view`: see what the agent did, in a browser, and label it.

sessions.py sessions and steps from the journal (export's records + timings, flags)
overlay.py  actions drawn in screenshot pixels (SVG)
render.py   session index and step-card pages;  reports.py  vision-check / candidate-eval pages
page.py     the page shell, escaping, CSP;  images.py  cached thumbnails and regenerated cases
site.py     every page as a route: written to a folder, or served by server.py (the only writer of labels)
command.py  the command itself
"""
