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

#: numpy dtype -> (Fortran kind, FTorch dtype constant)
KINDS = {"float32": ("real32", "torch_kFloat32"), "float64": ("real64", "torch_kFloat64")}
INFER_PHASES = ("marshal_in", "forward", "marshal_out")
TRAIN_PHASES = ("zero_grad", "forward", "loss", "backward", "step")
#: the --train-call forms FTorch has: example 11's operators, or its torch_loss_mse
TRAIN_CALLS = ("ftorch-operators", "ftorch-mse")


@dataclass(frozen=True)
class Array:
    """One host array as the driver declares it: a Fortran pointer of this kind and rank."""

    dtype: str
    rank: int

    @property
    def kind(self) -> str:
        return KINDS[self.dtype][0]


@dataclass(frozen=True)
class CallSignature:
    inputs: tuple[Array, ...]
    output: Array


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


def _shape(rank: int) -> str:
    return ",".join(":" * rank)


def program(sig: Signature) -> str:
    """The driver's Fortran source for `sig`."""
    train = sig.task == "train"
    nrow = 1 + len(sig.phases)
    decl, reads, maps, timed, load_extra, nan_snap, cleanup = [], [], [], [], [], [], []
    for c, call in enumerate(sig.calls, 1):
        n_in = len(call.inputs)
        arrays = [(f"x{c}_{j}", a) for j, a in enumerate(call.inputs, 1)] + [(f"y{c}", call.output)]
        if train:
            arrays.append((f"t{c}", call.output))
        for name, a in arrays:
            decl.append(f"  real({a.kind}), pointer, contiguous :: {name}({_shape(a.rank)})")
            decl.append(f"  integer(int64) :: off_{name}, shape_{name}({a.rank})")
            decl.append(f"  integer :: layout_{name}({a.rank})")
            reads.append(f"  read(config_unit, *) off_{name}, shape_{name}")
            maps.append(f"  call c_f_pointer(at(off_{name}), {name}, shape_{name})")
            maps.append(f"  layout_{name} = layout_of({a.rank})")
        decl.append(f"  type(torch_tensor) :: in{c}({n_in}), out{c}(1)" + (f", tg{c}(1)" if train else ""))
        decl.append(f"  integer(int64) :: nan{c}, snap{c}, bytes{c}")
        decl.append("  integer(int64) :: " + ", ".join(f"c{c}_t{k}" for k in range(len(sig.phases) + 1)))
        reads.append(f"  read(config_unit, *) nan{c}, snap{c}, bytes{c}")
        nan_snap.append((c, f"nan{c}", f"snap{c}", f"bytes{c}", f"off_y{c}"))
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
    last = f"c{len(sig.calls)}_t{len(sig.phases)}"
    record = [f"    row(1) = clock_seconds(c1_t0, {last}, rate)"]
    for k in range(1, len(sig.phases) + 1):
        terms = " + ".join(f"clock_seconds(c{c}_t{k - 1}, c{c}_t{k}, rate)" for c in range(1, len(sig.calls) + 1))
        record.append(f"    row({k + 1}) = {terms}")
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
    snap_lines, nan_lines = [], []
    for c, nan, snap, nbytes, off in nan_snap:
        nan_lines.append(f"        if (nan_fill) call copy_bytes(off_y{c}, {nan}, {nbytes})")
        snap_lines.append(f"        if (nan_fill) call copy_bytes({snap} + (k - 1) * {nbytes}, off_y{c}, {nbytes})")
    signature_words = "; ".join(
        f"call {c}: " + ", ".join(f"{a.kind}({_shape(a.rank)})" for a in call.inputs)
        + f" -> {call.output.kind}({_shape(call.output.rank)})" for c, call in enumerate(sig.calls, 1))
    lines = [
        "! Generated by couplescope (couplescope/backends/hosts/driver/ftorch_program.py) for one",
        f"! call signature: {signature_words}; task {sig.task}"
        + (f", loss as {sig.train_call}" if train else "") + (", model loaded every call" if sig.reload else "") + ".",
        "! The timed calls in `iteration` are FTorch's, made as its examples make them; between",
        "! two system_clock reads there is nothing else.",
        "program couplescope_ftorch_driver",
        "  use, intrinsic :: iso_c_binding, only: c_double, c_f_pointer, c_int, c_int64_t, c_ptr",
        "  use, intrinsic :: iso_fortran_env, only: real32, real64, int64",
        "  use ftorch",
        "  use couplescope_shared",
        "  implicit none",
        "  character(len=4096) :: shared_path, config_path, model_path, word, text",
        "  integer(int64) :: total_bytes, capacity, timings_offset, losses_offset, count, k, made, rate",
        "  integer(int64) :: began, now",
        "  integer :: layout_flag, optimizer_code, nparams, nfeeds, i, feed",
        "  real(c_double) :: lr, budget, step_loss",
        "  logical :: nan_fill",
        "  real(c_double), pointer :: timings(:,:), losses(:)",
        "  integer(int64), allocatable :: feed_array(:), feed_rows(:), feed_bytes(:)",
        "  integer(int64), allocatable :: state_weight(:), state_grad(:), state_rank(:), state_shape(:,:)",
        "  integer(c_int), allocatable :: state_dtype(:)",
        "  type(torch_model) :: model",
        *decl, *train_decl,
        "",
        "  call get_command_argument(1, shared_path)",
        "  call get_command_argument(2, config_path)",
        "  call open_config(config_path)",
        "  read(config_unit, \"(A)\") model_path",
        "  read(config_unit, *) total_bytes, capacity, timings_offset, losses_offset, layout_flag, "
        "optimizer_code, lr, nparams, nfeeds",
        *reads,
        "  allocate(feed_array(nfeeds), feed_rows(nfeeds), feed_bytes(nfeeds))",
        "  do i = 1, nfeeds",
        "    read(config_unit, *) feed_array(i), feed_rows(i), feed_bytes(i)",
        "  end do",
        "  allocate(state_weight(nparams), state_grad(nparams), state_rank(nparams), state_shape(8, nparams))",
        "  allocate(state_dtype(nparams))",
        "  state_shape = 1",
        "  do i = 1, nparams",
        "    read(config_unit, *) state_weight(i), state_grad(i), state_dtype(i), state_rank(i), "
        "state_shape(1:state_rank(i), i)",
        "  end do",
        "  close(config_unit)",
        "  call map_shared(shared_path, total_bytes)",
        *maps,
        f"  call c_f_pointer(at(timings_offset), timings, [{nrow}_int64, capacity])",
        "  call c_f_pointer(at(losses_offset), losses, [capacity])",
        "  call system_clock(count_rate=rate)",
        "  call reply(\"ready\")",
        "  do",
        "    call read_command(word, count, budget, feed, text)",
        "    select case (trim(word))",
        "    case (\"load\")",
        load_call,
        *load_extra,
        "      call reply(\"loaded\")",
        "    case (\"call\", \"batch\")",
        "      nan_fill = trim(word) == \"batch\"",
        "      made = 0",
        "      call system_clock(began)",
        "      do k = 1, max(count, 1_int64)",
        *nan_lines,
        "        if (nan_fill .and. feed == 1) then",
        "          do i = 1, nfeeds",
        "            call copy_bytes(feed_array(i), feed_rows(i) + (k - 1) * feed_bytes(i), feed_bytes(i))",
        "          end do",
        "        end if",
        "        call iteration(k)",
        *snap_lines,
        "        made = k",
        "        call system_clock(now)",
        "        if (clock_seconds(began, now, rate) > budget) exit",
        "      end do",
        "      write(text, \"(I0)\") made",
        "      call reply(\"done \"//trim(text))",
        "    case (\"state\", \"weights\")",
        "      call copy_state(trim(word) == \"state\")",
        "      call reply(\"state\")",
        "    case (\"save\")",
        "      call torch_model_save(model, trim(text))",
        "      call reply(\"saved\")",
        "    case (\"quit\")",
        "      exit",
        "    case default",
        "      call fail(\"unknown command \"//trim(word))",
        "    end select",
        "  end do",
        *cleanup,
        "  call torch_delete(model)",
        "",
        "contains",
        "",
        "  !> FTorch's layout argument: 1..rank reads the Fortran arrays as they are; the reversed",
        "  !> permutation reads them as row-major (--layout c, the transposition bug).",
        "  pure function layout_of(rank) result(layout)",
        "    integer, intent(in) :: rank",
        "    integer :: layout(rank), d",
        "    do d = 1, rank",
        "      layout(d) = merge(d, rank + 1 - d, layout_flag == 1)",
        "    end do",
        "  end function layout_of",
        "",
        "  !> One iteration's calls, timed: the user's library between the clock reads.",
        "  subroutine iteration(k)",
        "    integer(int64), intent(in) :: k",
        f"    real(c_double) :: row({nrow})",
        "    step_loss = 0",
        *timed,
        *record,
        "    timings(:, k) = row",
        f"    losses(k) = step_loss / {len(sig.calls)}",
        "  end subroutine iteration",
        "",
        "  !> The weights (and, with grads, their gradients) into the shared file, for the checks:",
        "  !> tensors over the shared memory, the parameter assigned into them (FTorch's",
        "  !> assignment copies), torch_tensor_get_gradient for the gradient.",
        "  subroutine copy_state(grads)",
        "    logical, intent(in) :: grads",
    ]
    if train:
        lines += [
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
        lines += ["    if (grads) continue"]
    lines += ["  end subroutine copy_state", "", "end program couplescope_ftorch_driver", ""]
    return "\n".join(wrapped for line in lines for wrapped in _fortran_lines(line))


def _fortran_lines(line: str, width: int = 100) -> list[str]:
    """A long statement continued with `&` after a comma (free form allows 132 columns)."""
    if len(line) <= width or line.lstrip().startswith("!"):
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    out, current = [], ""
    for piece in line.split(", "):
        candidate = f"{current}, {piece}" if current else piece
        if current and len(candidate) > width:
            out.append(current + ", &")
            current = indent + piece
        else:
            current = candidate
    out.append(current)
    return out


def config_text(model_path: str, total_bytes: int, capacity: int, timings_offset: int,
                losses_offset: int, layout: str, optimizer: str, lr: float, calls, feeds,
                params) -> str:
    """The numbers the program reads, in its order. `calls`: per call ([(offset, shape)] of
    its inputs, (offset, shape) of its output, (offset, shape) of its target or None,
    (nan offset, snapshot offset, output bytes), its loss buffer's offset or None);
    `feeds`: [(array offset, rows offset, bytes)]; `params`: [(weight offset, grad offset,
    dtype, shape)]."""
    out = [model_path,
           f"{total_bytes} {capacity} {timings_offset} {losses_offset} {1 if layout == 'fortran' else 2} "
           f"{2 if optimizer == 'adam' else 1} {lr!r} {len(params)} {len(feeds)}"]
    for inputs, output, target, (nan, snap, nbytes), loss in calls:
        for offset, shape in [*inputs, output, *([target] if target else [])]:
            out.append(" ".join(str(v) for v in (offset, *shape)))
        out.append(f"{nan} {snap} {nbytes}")
        if loss is not None:
            out.append(str(loss))
    for array, rows, nbytes in feeds:
        out.append(f"{array} {rows} {nbytes}")
    for weight, grad, dtype, shape in params:
        code = 1 if dtype == "float32" else 2
        out.append(" ".join(str(v) for v in (weight, grad, code, len(shape), *shape)))
    return "\n".join(out) + "\n"
