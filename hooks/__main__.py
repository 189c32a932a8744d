"""``python -m hooks EVENT``, and the installed form ``python -I -S .../hooks/__main__.py EVENT``.

The installed form skips ``site`` (-S): site processing — in an editable
install, its import finder alone — costs more than the whole hook. Without it
our packages are not on ``sys.path``, so add the directory that holds them,
after the standard library so nothing there can shadow a stdlib module.
"""

import sys

if not __package__:
    import os

    sys.path.append(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

from hooks.cli import main  # noqa: E402

sys.exit(main())
