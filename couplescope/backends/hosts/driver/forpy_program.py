"""The forpy driver's Fortran program, written for one call signature.

The timed region of the forpy host must hold forpy's code and the embedded Python call,
and nothing of ours but the clock reads. forpy's `ndarray_create_nocopy` is a generic
interface resolved at compile time by the array's kind and rank, so, as for FTorch
(ftorch_program), this module writes the program a forpy user writes for the variant's
arrays. Per workload call, as the bridge contract (docs/bridge.md) and FTorch-benchmarks'
forpy programs make it:

  marshal_in   `ndarray_create_nocopy` of every input and of the output (a training
               step: of the target), `tuple_create` of the inputs' tuple and `setitem` of
               each, `tuple_create` of the argument tuple and `setitem` of both
  (the call)   `call_py(ret, module, "compute", args)`: forpy looks the function up by
               name (getattribute), makes an empty keyword dict and calls it; the
               module's own phases (forward, its marshal_in and marshal_out) are timed in
               Python by the phase clock it was given (config["phase"])
  marshal_out  a training step's loss read from the return value (`cast_nonstrict`, or
               from a (done, loss) tuple, as pytorch-fortran's ftn_pytorch_train returns
               it), then `destroy` of the return value, the tuples and the arrays

With --reload-every-call the iteration starts with the module imported by name
(`import_py`, which finds it in sys.modules as Python's import does) and `initialize`
called again (load). Every statement's error code goes into an array element, read
after the last clock read; the module's phases are fetched then too (couplescope_forpy).
"""

from __future__ import annotations

from dataclasses import dataclass

from couplescope.backends.clock import PHASES
from couplescope.backends.hosts.driver.driver_program import (Array, CallSignature, ProgramParts, array_lines,
                                                              call_arrays, output_lines, signature_text,
                                                              skeleton)

__all__ = ["Array", "CallSignature", "Signature", "program", "column", "ROW"]

#: forpy's ndarray_create_nocopy has specific procedures for ranks 1 to 4
MAX_RANK = 4
#: a timings row: the whole iteration, then every phase name the phase clock knows, so that
#: the host's own phases and the module's add into one row
ROW = 1 + len(PHASES)


def column(phase: str) -> int:
    """The Fortran index of `phase` in a timings row."""
    return 2 + PHASES.index(phase)


@dataclass(frozen=True)
class Signature:
    calls: tuple[CallSignature, ...]
    task: str = "infer"
    reload: bool = False

    @property
    def function(self) -> str:
        """The module's function called by name: compute, or train under --task train."""
        return "train" if self.task == "train" else "compute"


#: what a training step's return value must be (the words of the native host's refusal)
LOSS_WORDS = "train must return the loss (a float) or (done, loss)"


def _call_lines(c: int, call: CallSignature, sig: Signature) -> tuple[list, list, int]:
    """(declarations, timed statements per phase, the call_py's error code's index) of
    workload call `c`: marshal_in, the call by name, marshal_out."""
    train = sig.task == "train"
    second = f"t{c}" if train else f"y{c}"   # after the inputs: the output, or the target
    views = [f"x{c}_{j}" for j in range(1, len(call.inputs) + 1)] + [second]
    codes = []   # the statements whose error codes are kept, in order: ie<c>(1), ie<c>(2), ...

    def coded(statement: str, indent: str = "    ") -> str:
        codes.append(statement)
        return f"{indent}ie{c}({len(codes)}) = {statement}"

    marshal_in = [coded(f"ndarray_create_nocopy(nd_{v}, {v})") for v in views]
    marshal_in.append(coded(f"tuple_create(ins{c}, {len(call.inputs)})"))
    marshal_in += [coded(f"ins{c}%setitem({j}, nd_x{c}_{j + 1})") for j in range(len(call.inputs))]
    marshal_in += [coded(f"tuple_create(args{c}, 2)"), coded(f"args{c}%setitem(0, ins{c})"),
                   coded(f"args{c}%setitem(1, nd_{second})")]
    the_call = [coded(f"call_py(ret{c}, bridge_module, \"{sig.function}\", args{c})")]
    call_ie = len(codes)
    decl = ["  type(ndarray) :: " + ", ".join(f"nd_{v}" for v in views),
            f"  type(tuple) :: ins{c}, args{c}",
            f"  type(object) :: ret{c}"]
    marshal_out = []
    if train:   # the loss, as a forpy caller unpacks what train returned
        decl += [f"  type(tuple) :: done_loss{c}", f"  type(object) :: loss_item{c}", f"  real(real64) :: loss{c}"]
        marshal_out += [f"    if (ie{c}({call_ie}) == 0) then",
                        f"      if (is_tuple(ret{c})) then",
                        coded(f"cast(done_loss{c}, ret{c})", "        "),
                        coded(f"done_loss{c}%getitem(loss_item{c}, 1)", "        "),
                        coded(f"cast_nonstrict(loss{c}, loss_item{c})", "        "),
                        f"        call loss_item{c}%destroy",
                        f"        call done_loss{c}%destroy",
                        "      else",
                        coded(f"cast_nonstrict(loss{c}, ret{c})", "        "),
                        "      end if",
                        "    end if"]
    marshal_out += [f"    call ret{c}%destroy", f"    call args{c}%destroy", f"    call ins{c}%destroy",
                    *(f"    call nd_{v}%destroy" for v in views)]
    decl.append(f"  integer(c_int) :: ie{c}({len(codes)})")
    return decl, [marshal_in, the_call, marshal_out], call_ie


def program(sig: Signature) -> str:
    """The driver's Fortran source for `sig`."""
    train = sig.task == "train"
    decl, reads, maps, timed, record, call_codes = [], [], [], [], [], []
    steps = 3
    if sig.reload:
        decl.append("  integer(int64) :: load_t0, load_t1")
        decl.append("  integer(c_int) :: load_ie(2)")
        timed += ["    call system_clock(load_t0)",
                  "    call bridge_module%destroy",
                  "    load_ie(1) = import_py(bridge_module, trim(module_name))",
                  "    load_ie(2) = call_py_noret(bridge_module, \"initialize\", init_args)",
                  "    call system_clock(load_t1)"]
    for c, call in enumerate(sig.calls, 1):
        for name, a in call_arrays(c, call, train):
            lines = array_lines(name, a, ", asynchronous")   # as forpy's README declares wrapped arrays
            decl += lines[0]
            reads += lines[1]
            maps += lines[2]
        out_decl, out_reads = output_lines(c, steps)
        call_decl, parts, call_ie = _call_lines(c, call, sig)
        call_codes.append(call_ie)
        decl += out_decl + call_decl
        reads += out_reads
        timed.append(f"    call system_clock(c{c}_t0)")
        for k, lines in enumerate(parts, 1):
            timed += lines
            timed.append(f"    call system_clock(c{c}_t{k})")
    n = len(sig.calls)
    first = "load_t0" if sig.reload else "c1_t0"

    def total(a: int, b: int) -> str:
        return " + ".join(f"clock_seconds(c{c}_t{a}, c{c}_t{b}, rate)" for c in range(1, n + 1))

    record += ["    row = 0",
               f"    row(1) = clock_seconds({first}, c{n}_t{steps}, rate)",
               f"    row({column('marshal_in')}) = {total(0, 1)}",
               f"    row({column('marshal_out')}) = {total(2, 3)}"]
    if sig.reload:
        record.append(f"    row({column('load')}) = clock_seconds(load_t0, load_t1, rate)")
        record.append("    if (any(load_ie /= 0)) call python_failed(\"\")")
    for c, call_ie in enumerate(call_codes, 1):
        # the call's own exception first; then the views', the tuples' or (training) the loss's
        record.append(f"    if (ie{c}({call_ie}) /= 0) call python_failed(\"\")")
        record.append(f"    if (any(ie{c} /= 0)) call python_failed(\"{LOSS_WORDS if train else ''}\")")
        record.append(f"    ie{c} = 0")   # (a training step's tuple branch sets some only)
    if train:
        record.append("    step_loss = " + " + ".join(f"loss{c}" for c in range(1, n + 1)))
    header = [
        "! Generated by couplescope (couplescope/backends/hosts/driver/forpy_program.py) for one",
        f"! call signature: {signature_text(sig.calls)}; the module's {sig.function} called by name"
        + (", the module imported and initialised every call" if sig.reload else "") + ".",
        "! The timed statements in `iteration` are forpy's, made as its users make them; between",
        "! two system_clock reads there is nothing else.",
    ]
    return skeleton(ProgramParts(
        name="couplescope_forpy_driver", header=header,
        uses=["  use forpy_mod", "  use couplescope_forpy"],
        declarations=["  type(module_py) :: bridge_module", "  character(len=:), allocatable :: module_name",
                      *decl],
        reads=reads, maps=maps, ncalls=n, nrow=ROW,
        init=["  call start_python(trim(model_path))"],
        load=["      call load_module(bridge_module, module_name)"],
        timed=timed, record=record,
        after_iteration=["        if (python_raised) exit", "        call add_module_phases(k)"],
        finish_batch=["      call reply_made(made)"],
        save=["      call save_model(trim(text))"],
        copy_state=["  !> The module's state() (weights and gradients) written where the worker reads it.",
                    "  subroutine copy_state(grads)",
                    "    logical, intent(in) :: grads",
                    "    call write_state(grads)",
                    "  end subroutine copy_state"],
        cleanup=["  call bridge_module%destroy", "  call stop_python"]))
