"""``python -m gpu_avatar ...``: the ``gpu-avatar`` command."""

from .cli import main

raise SystemExit(main())
