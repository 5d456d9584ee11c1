from ._async import AsyncMemory as AsyncMemory
from ._native import *
from ._native import __version__ as __version__
