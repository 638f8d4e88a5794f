# SPDX-License-Identifier: Apache-2.0
"""Makes `import fencelock` work from the source tree when the package is not installed
(pip install ./clients/python installs it; docs/python.md)."""

import os
import sys

try:
    import fencelock  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "clients", "python"))
