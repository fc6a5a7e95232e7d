"""Adding one step's outputs into the epoch's running totals, at the cost of a few float adds.

Why: ``fit`` records every step (a 4 ms step on the small MLP), and the generic route, one
``MetricVariable.assign_add`` per loss total, count and metric statistic, is a numpy ufunc call
with output and casting arguments for each 0-d value: about 1.5 us apiece on a quiet machine,
several times that with the caches cold after a step, and most of fit's bookkeeping. Nearly
every value is a float64 scalar added into a float64 scalar, which ``total[()] += value`` does
with the same rounding (one float64 addition) for a fraction of the cost.

``StepTotals`` looks at a step's outputs once (after each ``reset``, and per layout of
outputs: a weighted train step and an unweighted validation step of the same model can
differ) and sorts every value into a plan: loss totals (value times the batch size) and their
sample counts, scalar statistics of built-in metrics added as they are, and everything else (a custom metric's
host-side ``update_state``, a metric with vector statistics or integer state, a subclass with
its own ``merge_statistics``) merged by the metric itself, as before. The plan holds the
variables' own storage arrays, which ``reset``, ``assign`` and ``load_totals`` write in place,
so a metric's ``result()`` read by a callback mid-epoch sees every step so far.
"""
import numpy as np

from hiapi.metrics.metric import Metric, StatisticsMetric


class StepTotals:
    def __init__(self, loss_trackers, metrics, sizes):
        """``loss_trackers``: one ``Mean`` per logged loss (the step's first outputs, in
        order); ``metrics``: the compiled metrics; ``sizes``: for a step with that many
        outputs, how many of them each metric takes after the losses."""
        self.loss_trackers, self.metrics, self.sizes = loss_trackers, metrics, sizes
        self.plans = {}

    def record(self, results, batch_size):
        """Add one step's outputs (``results``, the step's output arrays) for a batch of
        ``batch_size`` samples."""
        plan = self.plans.get(len(results))
        if plan is None:
            plan = self.plans[len(results)] = self._plan(results, self.sizes[len(results)])
        losses, added, merged = plan
        for total, count, k in losses:        # Mean.update_state(loss, batch_size)
            total[()] += float(results[k]) * batch_size
            count[()] += batch_size
        for total, k in added:
            total[()] += results[k]
        for metric, start, stop in merged:
            metric.merge_step_outputs(results[start:stop])

    def _plan(self, results, sizes):
        losses = [(tracker.total.value, tracker.count.value, k)
                  for k, tracker in enumerate(self.loss_trackers)]
        added, merged, position = [], [], len(self.loss_trackers)
        for metric, size in zip(self.metrics, sizes):
            outputs = results[position:position + size]
            variables = _scalar_statistics(metric, outputs)
            if variables is None:
                merged.append((metric, position, position + size))
            else:
                added += [(variable.value, position + k) for k, variable in
                          enumerate(variables)]
            position += size
        return losses, added, merged


def _scalar_statistics(metric, outputs):
    """The statistic variables of ``metric`` when each is a float64 scalar that its step
    output (a float scalar) is simply added into, else None (the metric merges itself)."""
    kind = type(metric)
    if not (isinstance(metric, StatisticsMetric) and metric.uses_statistics and
            kind.merge_statistics is StatisticsMetric.merge_statistics and
            kind.merge_step_outputs is Metric.merge_step_outputs):
        return None
    variables = metric._statistic_variables()
    if len(variables) != len(outputs):
        return None
    for variable, value in zip(variables, outputs):
        if variable.value.dtype != np.float64 or variable.value.shape != () or \
                np.ndim(value) != 0 or np.asarray(value).dtype.kind != "f":
            return None
    return variables
