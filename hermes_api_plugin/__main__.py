"""`python -m hermes_api_plugin gateway|init`."""

from __future__ import annotations

import sys

from .gateway.cli import main

sys.exit(main())
