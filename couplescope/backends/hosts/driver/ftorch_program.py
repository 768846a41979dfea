"""The FTorch driver's Fortran program, written for one call signature, and its configuration.

The timed region of the ftorch host must hold the user's library and their compiler's
code, and nothing of ours but the clock reads. FTorch's `torch_tensor_from_array` is a
generic interface resolved at compile time by the array's type and rank, so a program
that served every signature would have to choose the call in the timed region. Instead
this module writes the program a user would write for the variant's arrays (their kinds,
ranks and number, per workload call), as FTorch's examples write it:

  inference (examples 2 and 6): per call, `torch_tensor_from_array` for every input and for
  the output (marshal_in), `torch_model_forward` (forward: FTorch's forward copies the
  result into the Fortran output inside that call), `torch_delete` of the tensors
  (marshal_out); with --reload-every-call `torch_model_load` first (load).
  training (example 11): tensors over the input, target and output arrays made once, the
  model loaded with is_training, `torch_model_parameters` into `torch_optim_SGD` (or Adam);
  per call `optimizer%zero_grad()`, `torch_model_forward(..., requires_grad=.true.)`, the
  loss (`torch_tensor_from_array(loss, loss_data)` then `torch_tensor_mean(loss, (out -
  target) ** 2)`, or `torch_loss_mse`), `torch_tensor_backward(loss)`, `optimizer%step()`.

Shapes, offsets into the shared file, the layout and the learning rate are read at run
time from the configuration this module also writes (`config_text`, in the order the
program reads it), so one compiled program serves every size of a signature. Everything
between iterations (NaN into the outputs, snapshots, a step's data, the records) is
couplescope_shared's, outside the clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.backends.hosts.driver.driver_program import (Array, CallSignature, ProgramParts, array_lines,
                                                              call_arrays, config_text, output_lines,
                                                              phase_rows, signature_text, skeleton)

__all__ = ["KINDS", "INFER_PHASES", "TRAIN_PHASES", "TRAIN_CALLS", "Array", "CallSignature", "Signature",
           "program", "config_text"]

#: numpy dtype -> (Fortran kind, FTorch dtype constant)
KINDS = {"float32": ("real32", "torch_kFloat32"), "float64": ("real64", "torch_kFloat64")}
INFER_PHASES = ("marshal_in", "forward", "marshal_out")
TRAIN_PHASES = ("zero_grad", "forward", "loss", "backward", "step")
#: the --train-call forms FTorch has: example 11's operators, or its torch_loss_mse
TRAIN_CALLS = ("ftorch-operators", "ftorch-mse")


@dataclass(frozen=True)
class Signature:
    """What the program's text depends on: the calls' arrays, the task, how the loss is made."""

    calls: tuple[CallSignature, ...]
    task: str = "infer"
    train_call: str = "ftorch-operators"
    reload: bool = False
    #: fortran: torch_tensor_from_array's default layout, as FTorch's examples call it; c:
    #: its explicit layout argument, reversed (the transposition bug, --layout c)
    layout: str = "fortran"

    @property
    def phases(self) -> tuple[str, ...]:
        if self.task == "train":
            return TRAIN_PHASES
        return (("load",) if self.reload else ()) + INFER_PHASES


def program(sig: Signature) -> str:
    """The driver's Fortran source for `sig`."""
    train = sig.task == "train"
    decl, reads, maps, timed, load_extra, cleanup = [], [], [], [], [], []
    for c, call in enumerate(sig.calls, 1):
        n_in = len(call.inputs)
        for name, a in call_arrays(c, call, train):
            lines = array_lines(name, a)
            decl += lines[0]
            reads += lines[1]
            maps += lines[2]
        decl.append(f"  type(torch_tensor) :: in{c}({n_in}), out{c}(1)" + (f", tg{c}(1)" if train else ""))
        out_decl, out_reads = output_lines(c, len(sig.phases))
        decl += out_decl
        reads += out_reads

        def make(tensor, name):
            layout = f"layout_{name}, " if sig.layout != "fortran" else ""
            return f"    call torch_tensor_from_array({tensor}, {name}, {layout}torch_kCPU)"

        make_in = [make(f"in{c}({j})", f"x{c}_{j}") for j in range(1, n_in + 1)]
        make_out = make(f"out{c}(1)", f"y{c}")
        if train:
            load_extra += [line.replace("    call", "      call") for line in make_in]
            load_extra.append("  " + make(f"tg{c}(1)", f"t{c}"))
            load_extra.append(make_out.replace("    call", "      call"))
            # each call's loss over a buffer of its own, read after the iteration's last clock read
            loss_kind = call.output.kind
            decl.append(f"  real({loss_kind}), pointer, contiguous :: loss_data{c}(:)")
            decl.append(f"  integer(int64) :: off_loss{c}")
            decl.append(f"  type(torch_tensor) :: loss{c}")
            reads.append(f"  read(config_unit, *) off_loss{c}")
            maps.append(f"  call c_f_pointer(at(off_loss{c}), loss_data{c}, [1_int64])")
            if sig.train_call == "ftorch-mse":
                loss = [f"    call torch_tensor_from_array(loss{c}, loss_data{c}, torch_kCPU)",
                        f"    call torch_loss_mse(loss{c}, out{c}(1), tg{c}(1))"]
            else:
                loss = [f"    call torch_tensor_from_array(loss{c}, loss_data{c}, torch_kCPU)",
                        f"    call torch_tensor_mean(loss{c}, (out{c}(1) - tg{c}(1)) ** 2)"]
            steps = [["    call optimizer%zero_grad()"],
                     [f"    call torch_model_forward(model, in{c}, out{c}, requires_grad=.true.)"],
                     loss,
                     [f"    call torch_tensor_backward(loss{c})"],
                     ["    call optimizer%step()"]]
            cleanup += [f"  call torch_delete(in{c})", f"  call torch_delete(out{c})", f"  call torch_delete(tg{c})",
                        f"  call torch_delete(loss{c})"]
        else:
            steps = [make_in + [make_out],
                     [f"    call torch_model_forward(model, in{c}, out{c})"],
                     [f"    call torch_delete(in{c})", f"    call torch_delete(out{c})"]]
            if sig.reload:
                steps.insert(0, ["    call torch_model_load(model, trim(model_path), torch_kCPU)"])
        timed.append(f"    call system_clock(c{c}_t0)")
        for k, lines in enumerate(steps, 1):
            timed += lines
            timed.append(f"    call system_clock(c{c}_t{k})")
    record = phase_rows(len(sig.calls), len(sig.phases))
    train_decl = []
    if train:
        train_decl = ["  type(torch_optim) :: optimizer",
                      "  type(torch_tensor), allocatable :: params(:)"]
        cleanup.append("  call torch_delete(optimizer)")
        record.append("    step_loss = " + " + ".join(f"real(loss_data{c}(1), c_double)"
                                                        for c in range(1, len(sig.calls) + 1)))
    load_call = ("      call torch_model_load(model, trim(model_path), torch_kCPU, is_training=.true.)"
                 if train else "      call torch_model_load(model, trim(model_path), torch_kCPU)")
    if train:
        load_extra = ["      allocate(params(nparams))",
                      "      call torch_model_parameters(model, params)",
                      "      if (optimizer_code == 2) then",
                      "        call torch_optim_Adam(optimizer, params, learning_rate=lr)",
                      "      else",
                      "        call torch_optim_SGD(optimizer, params, learning_rate=lr)",
                      "      end if", *load_extra]
    header = [
        "! Generated by couplescope (couplescope/backends/hosts/driver/ftorch_program.py) for one",
        f"! call signature: {signature_text(sig.calls)}; task {sig.task}"
        + (f", loss as {sig.train_call}" if train else "") + (", model loaded every call" if sig.reload else "") + ".",
        "! The timed calls in `iteration` are FTorch's, made as its examples make them; between",
        "! two system_clock reads there is nothing else.",
    ]
    copy_state = [
        "  !> The weights (and, with grads, their gradients) into the shared file, for the checks:",
        "  !> tensors over the shared memory, the parameter assigned into them (FTorch's",
        "  !> assignment copies), torch_tensor_get_gradient for the gradient.",
        "  subroutine copy_state(grads)",
        "    logical, intent(in) :: grads",
    ]
    if train:
        copy_state += [
            "    type(torch_tensor) :: held",
            "    integer :: p, d",
            "    integer(c_int) :: layout(8), dtype",
            "    layout = [(d, d = 1, 8)]",
            "    do p = 1, nparams",
            "      dtype = merge(torch_kFloat32, torch_kFloat64, state_dtype(p) == 1)",
            "      call torch_tensor_from_blob(held, at(state_weight(p)), int(state_rank(p), c_int), "
            "int(state_shape(1:state_rank(p), p), c_int64_t), layout(1:state_rank(p)), dtype, torch_kCPU)",
            "      held = params(p)",
            "      call torch_delete(held)",
            "      if (grads) then",
            "        call torch_tensor_from_blob(held, at(state_grad(p)), int(state_rank(p), c_int), "
            "int(state_shape(1:state_rank(p), p), c_int64_t), layout(1:state_rank(p)), dtype, torch_kCPU)",
            "        call torch_tensor_get_gradient(held, params(p))",
            "        call torch_delete(held)",
            "      end if",
            "    end do",
        ]
    else:
        copy_state += ["    if (grads) continue"]
    copy_state.append("  end subroutine copy_state")
    return skeleton(ProgramParts(
        name="couplescope_ftorch_driver", header=header, uses=["  use ftorch"],
        declarations=["  type(torch_model) :: model", *decl, *train_decl], reads=reads, maps=maps,
        ncalls=len(sig.calls), nrow=1 + len(sig.phases), load=[load_call, *load_extra], timed=timed,
        record=record, save=["      call torch_model_save(model, trim(text))"], copy_state=copy_state,
        cleanup=[*cleanup, "  call torch_delete(model)"]))


