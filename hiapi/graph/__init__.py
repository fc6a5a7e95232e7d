"""The symbolic graph: Vars, ops, autodiff, and compiled Functions."""
from hiapi.graph import ops
from hiapi.graph.autodiff import grad
from hiapi.graph.function import Function
from hiapi.graph.op import Op, Spec
from hiapi.graph.ops import constant, placeholder
from hiapi.graph.schedule import execution_order, topological_order
from hiapi.graph.var import Var
from hiapi.graph.variable import Variable
