"""``fleet web``: every fleet of this user, on this machine and its hosts, as a page made for a phone.

:mod:`.view` looks at the fleets through the one fleet handle (what ``fleet status`` shows) and turns
the rows and the attention queue into the page's document; :mod:`.actions` is what a person may do
from the page, each an existing verb (restart an agent, raise a budget) or the queue's snooze;
:mod:`.page` is the page itself (HTML, CSS and a small script, no build step); :mod:`.app` is the
Starlette app that serves them behind the access token; :mod:`.server` binds, prints the URL and runs
uvicorn until Ctrl-C or SIGTERM.

Starlette and uvicorn are the ``web`` extra (``pip install 'claude-shepherd[web]'``): nothing outside
this package imports them, and the hooks never import this package.
"""
