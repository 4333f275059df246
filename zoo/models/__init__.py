"""Every model of the zoo; importing this package registers them all.

Each module of this package defines one model family and registers its names; the modules are
imported here automatically, so adding a model file is enough to add it to the registry.
"""

import importlib
import pkgutil

from zoo.models.base import NLIModel

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["NLIModel"]
