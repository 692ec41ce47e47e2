"""attnlib: the algorithms of the book *How softmax attention trains*.

Part I (Goel, Soltanolkotabi, Bartlett 2026): ``data``, ``attention``, ``population``,
``geometry``, ``algorithm``. Part II (Frangi, Mukherjee, Kumar, Sun, Sun 2026): ``villani``,
``langevin``, ``lora``, ``qk_attention``, ``darcy``, ``vit``. Shared: ``experiments`` (named,
seeded runs and their stored histories), ``plotting`` (the book's figure style) and
``tables`` (result tables as HTML and aligned text).
Import the submodules directly, e.g. ``from attnlib import attention``.
"""

__version__ = "0.1.0"
