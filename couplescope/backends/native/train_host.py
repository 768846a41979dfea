"""The torchscript backend's training step on the native host: train_host.cpp's TrainHost,
FTorch's example 11 call for call, timed in C++.

The host's tensors wrap the input and target arrays once (the engine's learning task
writes each step's data into those arrays, before the step); a batch of steps runs in C++
with each step's data copied in from rows the engine filled ahead (InputSlot), outside the
timed phases. Under MPI the gradient averaging is the team's (mpi4py), called from C++
between backward and step as the allreduce phase; it then includes the step from C++ into
Python and back (about a microsecond), which a Fortran code calling MPI_Allreduce would
not pay.
"""

from __future__ import annotations

from couplescope.backends.base import Coupling

#: the phases TrainHost returns, in its order
PHASES = ("marshal_in", "h2d", "zero_grad", "forward", "loss", "backward", "allreduce", "step")


class NativeTraining(Coupling):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        from couplescope.backends import native
        from couplescope.backends.native.host_arrays import host_array

        self.native = native.module_for_worker()
        targets = ctx.extra["targets"]
        layout = ctx.spec.layout
        calls = [self.native.Call([host_array(self.native, ctx.arrays[n], layout) for n in c.inputs],
                                  host_array(self.native, targets[c.output], layout))
                 for c in ctx.calls]
        reducer = ctx.extra.get("allreduce")
        self._params = []
        allreduce = (lambda: reducer(self._params)) if reducer is not None else None
        self.host = self.native.TrainHost(ctx.torchscript_path, ctx.device, ctx.extra["optimizer"],
                                          float(ctx.extra["lr"]), ctx.spec.loss, ctx.spec.train_call, calls,
                                          allreduce)
        self._losses: list[float] = []
        if not ctx.spec.reload_every_call:
            from couplescope.backends.native.batch import NativeBatchRunner

            self.call_batch = NativeBatchRunner(self.native, self.host, {}, PHASES, inputs=ctx.arrays)

    def load(self) -> None:
        self.host.load()
        self._params = [weight for _, weight, _ in self.host.parameters()]

    def call(self) -> float:
        from couplescope.backends.native.host_arrays import add_host_phases

        ctx = self.ctx
        loading = 0.0
        if ctx.spec.reload_every_call:
            with ctx.clock("load"):
                self.load()
            loading = ctx.clock.phases["load"]
        whole, *rest = self.host.call(ctx.clock.profiling)
        phases, error, loss = rest[:len(PHASES)], rest[len(PHASES)], rest[len(PHASES) + 1]
        add_host_phases(ctx.clock.phases, PHASES, phases)
        self._losses.append(loss)
        if error:
            self.output_error = error
        return whole + loading

    def keep_for_probe(self):
        """libtorch's optimizer keeps Adam's step count as a C++ integer, which the
        operator probe's dispatch mode cannot see written: its state is kept whole."""
        state = self.host.optimizer_state()
        return lambda: self.host.set_optimizer_state(state)

    def take_losses(self) -> float:
        losses, self._losses = self._losses, []
        return sum(losses) / len(losses) if losses else float("nan")

    def state(self) -> dict:
        out = {}
        for name, weight, grad in self.host.parameters():
            out[name] = (weight.detach().cpu().numpy().copy(),
                         None if grad is None else grad.detach().cpu().numpy().copy())
        return out

    def save(self, path: str) -> None:
        self.host.save(path)
