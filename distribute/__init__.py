"""Data-parallel training over MPI behind ``fit``: see ``Strategy``."""
from hiapi.distribute import compression
from hiapi.distribute.communicator import (Communicator, LocalCommunicator, MPICommunicator,
                                           world)
from hiapi.distribute.easgd import EASGDStrategy
from hiapi.distribute.gradient_tape import DistributedGradientTape, broadcast_variables
from hiapi.distribute.local_sgd import LocalSGDStrategy
from hiapi.distribute.parameter_server import ParameterServerStrategy
from hiapi.distribute.pipeline import PipelineStrategy
from hiapi.distribute.tensor_parallel import TensorParallelStrategy
from hiapi.distribute.ring import ring_allreduce
from hiapi.models.strategy_scope import current_strategy
from hiapi.distribute.strategy import MPIStrategy, Strategy
