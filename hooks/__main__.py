"""``python -m claude_shepherd.hooks EVENT``, and the installed form ``python -I -S .../hooks/__main__.py EVENT``.

The installed form skips ``site`` (-S): site processing — in an editable
install, its import finder alone — costs more than the whole hook. Without it
our packages are not importable, so make ``claude_shepherd`` (a namespace
package: the folder holding ``hooks``, ``supervisor`` and ``fleet``) known by
hand, after the standard library so nothing of ours can shadow a stdlib module.
"""

import sys

if not __package__:
    import os
    import types

    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the folder holding hooks/
    if os.path.basename(here) == "claude_shepherd":  # installed: site-packages/claude_shepherd/hooks
        sys.path.append(os.path.dirname(here))
    else:  # an editable install: the checkout itself is the package's folder
        package = types.ModuleType("claude_shepherd")
        package.__path__ = [here]
        sys.modules["claude_shepherd"] = package

from claude_shepherd.hooks.cli import main

sys.exit(main())
