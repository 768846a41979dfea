"""The pytorch-fortran driver's Fortran program, written for one call signature.

The timed region of the pytorch-fortran host must hold the user's library and their
compiler's code, and nothing of ours but the clock reads. pytorch-fortran's
`torch_tensor_wrap%add_array` and `torch_tensor%from_array`/`to_array` are generic
type-bound procedures resolved at compile time by the array's kind and rank (its gen.py
writes one per kind and rank 1 to 6), so, as for FTorch (ftorch_program), this module
writes the program a user writes for the variant's arrays, with its module torch_ftn as
its examples use it (resnet_forward.f90, polynomial.f90):

  inference, per workload call:
    marshal_in   `in%add_array(x)` of every input: a tensor over the Fortran array's memory
                 (torch::from_blob, no copy) pushed into the call's torch_tensor_wrap, which
                 was made once at load with `in%create()`
    forward      `model%forward(in, out)`: the module's forward, its result made contiguous
                 and held by `out` (the previous call's result freed as it is replaced);
                 with --grad-mode inference `flags=module_use_inference_mode`, as
                 resnet_forward calls it (pytorch-fortran has no no_grad guard: without the
                 flag its forward runs with autograd on)
    marshal_out  `out%to_array(yp)`: the result handed back as a Fortran pointer to the
                 tensor's memory (no copy), then `in%clear()`: the input tensors released
  with --reload-every-call the call starts with `model%load(file)` (load).
  The result is copied from that pointer into the host's output array after the
  iteration's last clock read (`y = yp`): a user who needs it in their own array pays
  that copy, which FTorch's forward makes inside its call; here it is not timed.

  training, as polynomial.f90: at load `model%load(file)`, `model%create_optimizer_sgd(lr)`
  (torch::optim::SGD over the module's parameters), the inputs' wrap made and filled with
  `add_array` and the target's tensor made with `from_array`, once: they are views of the
  host's arrays, which the step's data is written into in place. Per call one
  `model%train(in, target, loss)` (train): zero_grad, forward, mse_loss, backward, step
  and the loss read with item(), all inside pytorch-fortran's one call, which cannot be
  split.

pytorch-fortran reverses the dimensions itself (the Fortran array x(a, b) is the tensor
(b, a), row-major), so its users declare their arrays with the dimensions reversed (its
README); the pointers here are declared so, over memory the host lays out row-major
(pytorch_fortran_coupling). Shapes, offsets into the shared file and the learning rate
are read at run time from the configuration (driver_program.config_text), so one compiled
program serves every size of a signature.
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.backends.hosts.driver.driver_program import (NO_STATE, Array, CallSignature, ProgramParts,
                                                              array_lines, call_arrays, output_lines, phase_rows,
                                                              shape_text, signature_text, skeleton)

__all__ = ["Array", "CallSignature", "Signature", "program", "MAX_RANK", "INFER_PHASES", "TRAIN_PHASES"]

#: pytorch-fortran's generated procedures take arrays of rank 1 to 6 (its gen.py)
MAX_RANK = 6
INFER_PHASES = ("marshal_in", "forward", "marshal_out")
#: one call makes the whole step: its phase has a name of its own (backends/clock.py)
TRAIN_PHASES = ("train",)


@dataclass(frozen=True)
class Signature:
    """What the program's text depends on: the calls' arrays, the task, the forward's flags."""

    calls: tuple[CallSignature, ...]
    task: str = "infer"
    reload: bool = False
    #: no_grad: forward(in, out), pytorch-fortran's only form without InferenceMode;
    #: inference: forward(in, out, flags=module_use_inference_mode)
    grad_mode: str = "no_grad"

    @property
    def phases(self) -> tuple[str, ...]:
        if self.task == "train":
            return TRAIN_PHASES
        return (("load",) if self.reload else ()) + INFER_PHASES


def program(sig: Signature) -> str:
    """The driver's Fortran source for `sig`."""
    train = sig.task == "train"
    decl, reads, maps, timed, load, record_copies = [], [], [], [], ["      call model%load(trim(model_path))"], []
    if train:
        load.append("      call model%create_optimizer_sgd(real(lr, real32))")
    flags = ", flags=module_use_inference_mode" if sig.grad_mode == "inference" else ""
    for c, call in enumerate(sig.calls, 1):
        for name, a in call_arrays(c, call, train):
            lines = array_lines(name, a, reversed_dims=True)
            decl += lines[0]
            reads += lines[1]
            maps += lines[2]
        out_decl, out_reads = output_lines(c, len(sig.phases))
        decl += [f"  type(torch_tensor_wrap) :: in{c}", *out_decl]
        reads += out_reads
        add = [f"    call in{c}%add_array(x{c}_{j})" for j in range(1, len(call.inputs) + 1)]
        load.append(f"      call in{c}%create()")
        if train:
            decl += [f"  type(torch_tensor) :: tg{c}", f"  real(real32) :: loss{c}"]
            load += [line.replace("    call", "      call") for line in add]
            load.append(f"      call tg{c}%from_array(t{c})")
            steps = [[f"    call model%train(in{c}, tg{c}, loss{c})"]]
        else:
            out = call.output
            decl += [f"  type(torch_tensor) :: out{c}",
                     f"  real({out.kind}), pointer :: yp{c}({shape_text(out.rank)})"]
            steps = [add,
                     [f"    call model%forward(in{c}, out{c}{flags})"],
                     [f"    call out{c}%to_array(yp{c})", f"    call in{c}%clear()"]]
            if sig.reload:
                steps.insert(0, ["    call model%load(trim(model_path))"])
            record_copies.append(f"    y{c} = yp{c}")
        timed.append(f"    call system_clock(c{c}_t0)")
        for k, lines in enumerate(steps, 1):
            timed += lines
            timed.append(f"    call system_clock(c{c}_t{k})")
    record = phase_rows(len(sig.calls), len(sig.phases))
    if train:
        record.append("    step_loss = " + " + ".join(f"real(loss{c}, c_double)" for c in range(1, len(sig.calls) + 1)))
    record += record_copies
    header = [
        "! Generated by couplescope (couplescope/backends/hosts/driver/pytorch_fortran_program.py) for one",
        f"! call signature: {signature_text(sig.calls)}; task {sig.task}"
        + (f", forward{' with module_use_inference_mode' if flags else ' without flags'}" if not train else "")
        + (", model loaded every call" if sig.reload else "") + ".",
        "! The timed calls in `iteration` are pytorch-fortran's (torch_ftn), made as its examples make",
        "! them; between two system_clock reads there is nothing else. The arrays' dimensions are the",
        "! tensors' reversed, as pytorch-fortran's users declare them.",
    ]
    return skeleton(ProgramParts(
        name="couplescope_pytorch_fortran_driver", header=header,
        uses=["  use torch_ftn, only: torch_module, torch_tensor, torch_tensor_wrap, module_use_inference_mode"],
        declarations=["  type(torch_module) :: model", *decl], reads=reads, maps=maps,
        ncalls=len(sig.calls), nrow=1 + len(sig.phases), load=load, timed=timed, record=record,
        save=["      call model%save(trim(text))"], copy_state=NO_STATE))
