"""scriptc.runtime: runs graphs and saved archives without the frontend or the eager layer."""

from scriptc.runtime.interpreter import Interpreter, ModuleValue  # noqa: F401
from scriptc.runtime.model import RuntimeModel, load  # noqa: F401
