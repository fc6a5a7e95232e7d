"""Which server holds which parameter: whole tensors, largest first to the least-loaded server
(the rule ZeRO sharding uses, ``sharding.assign_owners``), so per-tensor rules such as
``clipnorm`` or LARS's trust ratio stay exact on the server that applies them."""
from hiapi.distribute.sharding import assign_owners


class Layout:
    def __init__(self, variables, servers):
        """``variables``: the trainable parameters in model order; ``servers``: their ranks."""
        self.variables, self.servers = list(variables), list(servers)
        owners = assign_owners(self.variables, len(self.servers))
        self.owner = [self.servers[o] for o in owners]
        self._positions = {id(v): i for i, v in enumerate(self.variables)}

    def indices(self, server):
        """Positions (in model order) of the parameters ``server`` holds."""
        return [i for i, owner in enumerate(self.owner) if owner == server]

    def owned(self, server):
        return [self.variables[i] for i in self.indices(server)]

    def index(self, variable):
        return self._positions[id(variable)]

    def position(self, variable_id):
        """``index`` by ``id(variable)`` (how an optimizer keys its slots)."""
        return self._positions[variable_id]
