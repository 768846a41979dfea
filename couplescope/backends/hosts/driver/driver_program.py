"""What every library host's generated Fortran program shares: its frame and its configuration.

A library host writes one program per call signature (ftorch_program, forpy_program say
why: the library's generic interfaces are resolved at compile time by the arrays' kinds
and ranks, so the timed region cannot choose a call at run time). Around the timed calls
every such program is the same: it reads its configuration (the shared file's size and
regions, each array's offset and shape), points Fortran arrays at the shared file, and
answers the worker's commands ("load", "call", "batch", "state", "weights", "save",
"quit"), making a batch's iterations back to back with NaN into the outputs before each
and the outputs' snapshots after it, outside the clock reads. `skeleton` writes that
frame around what a host puts in it (`ProgramParts`); `array_lines` and `output_lines`
declare, read and map the host arrays, under the names every host uses (x<call>_<input>,
y<call>, t<call> for a training target). `config_text` writes the configuration in the
order the frame reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: numpy dtype -> the Fortran kind of an array of it
FORTRAN_KINDS = {"float32": "real32", "float64": "real64"}


@dataclass(frozen=True)
class Array:
    """One host array as the driver declares it: a Fortran pointer of this kind and rank."""

    dtype: str
    rank: int

    @property
    def kind(self) -> str:
        return FORTRAN_KINDS[self.dtype]


@dataclass(frozen=True)
class CallSignature:
    inputs: tuple[Array, ...]
    output: Array


def shape_text(rank: int) -> str:
    """`:,:` for rank 2: an assumed shape's colons."""
    return ",".join(":" * rank)


def call_arrays(c: int, call: CallSignature, train: bool) -> list[tuple[str, Array]]:
    """The host arrays of workload call `c` (from 1) by their names in the program: its
    inputs x<c>_<j>, its output y<c>, and under training its target t<c>."""
    arrays = [(f"x{c}_{j}", a) for j, a in enumerate(call.inputs, 1)] + [(f"y{c}", call.output)]
    return arrays + ([(f"t{c}", call.output)] if train else [])


def signature_text(calls) -> str:
    """The call signature in words, for the program's header comment."""
    return "; ".join(f"call {c}: " + ", ".join(f"{a.kind}({shape_text(a.rank)})" for a in call.inputs)
                     + f" -> {call.output.kind}({shape_text(call.output.rank)})" for c, call in enumerate(calls, 1))


def phase_rows(ncalls: int, nphases: int) -> list[str]:
    """The timings row of an iteration whose workload calls each read the clock between
    their phases (c<call>_t0 .. c<call>_t<nphases>): row(1) the whole, from the first
    call's first read to the last call's last; row(1 + k) phase k summed over the calls."""
    rows = [f"    row(1) = clock_seconds(c1_t0, c{ncalls}_t{nphases}, rate)"]
    for k in range(1, nphases + 1):
        terms = " + ".join(f"clock_seconds(c{c}_t{k - 1}, c{c}_t{k}, rate)" for c in range(1, ncalls + 1))
        rows.append(f"    row({k + 1}) = {terms}")
    return rows


def array_lines(name: str, a: Array, attributes: str = "",
                reversed_dims: bool = False) -> tuple[list[str], list[str], list[str]]:
    """(declarations, configuration reads, mapping) of one host array: a pointer into the
    shared file, its offset and shape read from the configuration, and its layout
    permutation (FTorch's layout argument; 1..rank unless --layout c). With
    `reversed_dims` the pointer's dimensions are the tensor's reversed, as
    pytorch-fortran's users declare their arrays (its README: the row-major tensor's
    memory, read from Fortran), and there is no layout argument."""
    decl = [f"  real({a.kind}), pointer, contiguous{attributes} :: {name}({shape_text(a.rank)})",
            f"  integer(int64) :: off_{name}, shape_{name}({a.rank})"]
    reads = [f"  read(config_unit, *) off_{name}, shape_{name}"]
    if reversed_dims:
        return decl, reads, [f"  call c_f_pointer(at(off_{name}), {name}, shape_{name}({a.rank}:1:-1))"]
    decl.append(f"  integer :: layout_{name}({a.rank})")
    maps = [f"  call c_f_pointer(at(off_{name}), {name}, shape_{name})",
            f"  layout_{name} = layout_of({a.rank})"]
    return decl, reads, maps


def output_lines(c: int, nphases: int) -> tuple[list[str], list[str]]:
    """(declarations, configuration reads) of call `c`'s NaN pattern and snapshots, and its
    clock reads c<c>_t0 .. c<c>_t<nphases>."""
    decl = [f"  integer(int64) :: nan{c}, snap{c}, bytes{c}",
            "  integer(int64) :: " + ", ".join(f"c{c}_t{k}" for k in range(nphases + 1))]
    return decl, [f"  read(config_unit, *) nan{c}, snap{c}, bytes{c}"]


@dataclass
class ProgramParts:
    """What a host puts into the frame. Lists are lines of Fortran, indented as they stand
    in the program (two spaces in the main program, six under a `case`)."""

    name: str                      # the program's name
    header: list                   # comment lines saying what it is and for which signature
    uses: list                     # `use` lines of the library (and the host's own modules)
    declarations: list             # the host's and the arrays' declarations
    reads: list                    # configuration reads after the common header, per call
    maps: list                     # after the shared file is mapped: the arrays pointed at it
    ncalls: int                    # workload calls per iteration
    nrow: int                      # doubles per timings row: the whole, then each phase
    load: list                     # under `case ("load")`
    timed: list                    # the iteration's timed statements, clock reads included
    record: list                   # after the last clock read: row(1..nrow), step_loss
    init: list = field(default_factory=list)       # before answering "ready"
    save: list = field(default_factory=list)       # under `case ("save")` (the path is `text`)
    #: the subroutine copy_state(grads) that "state" and "weights" call, comments first
    copy_state: list = field(default_factory=list)
    cleanup: list = field(default_factory=list)    # after "quit"
    #: in the batch loop after an iteration's snapshots (`exit` ends the batch early)
    after_iteration: list = field(default_factory=list)
    #: after the batch loop: the answer (default "done <made>")
    finish_batch: list = field(default_factory=list)
    contains: list = field(default_factory=list)   # more internal procedures


NO_STATE = ["  !> No state to read back (an inference driver).",
            "  subroutine copy_state(grads)",
            "    logical, intent(in) :: grads",
            "    if (grads) continue",
            "  end subroutine copy_state"]


def skeleton(parts: ProgramParts) -> str:
    """The program: the frame around the host's parts."""
    nan_lines = [f"        if (nan_fill) call copy_bytes(off_y{c}, nan{c}, bytes{c})"
                 for c in range(1, parts.ncalls + 1)]
    snap_lines = [f"        if (nan_fill) call copy_bytes(snap{c} + (k - 1) * bytes{c}, off_y{c}, bytes{c})"
                  for c in range(1, parts.ncalls + 1)]
    lines = [
        *parts.header,
        f"program {parts.name}",
        "  use, intrinsic :: iso_c_binding, only: c_double, c_f_pointer, c_int, c_int64_t, c_ptr",
        "  use, intrinsic :: iso_fortran_env, only: real32, real64, int64",
        *parts.uses,
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
        *parts.declarations,
        "",
        "  call get_command_argument(1, shared_path)",
        "  call get_command_argument(2, config_path)",
        "  call open_config(config_path)",
        "  read(config_unit, \"(A)\") model_path",
        "  read(config_unit, *) total_bytes, capacity, timings_offset, losses_offset, layout_flag, "
        "optimizer_code, lr, nparams, nfeeds",
        *parts.reads,
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
        *parts.maps,
        f"  call c_f_pointer(at(timings_offset), timings, [{parts.nrow}_int64, capacity])",
        "  call c_f_pointer(at(losses_offset), losses, [capacity])",
        "  call system_clock(count_rate=rate)",
        *parts.init,
        "  call reply(\"ready\")",
        "  do",
        "    call read_command(word, count, budget, feed, text)",
        "    select case (trim(word))",
        "    case (\"load\")",
        *parts.load,
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
        *parts.after_iteration,
        "        made = k",
        "        call system_clock(now)",
        "        if (clock_seconds(began, now, rate) > budget) exit",
        "      end do",
        *(parts.finish_batch or ["      write(text, \"(I0)\") made", "      call reply(\"done \"//trim(text))"]),
        "    case (\"state\", \"weights\")",
        "      call copy_state(trim(word) == \"state\")",
        "      call reply(\"state\")",
        "    case (\"save\")",
        *parts.save,
        "      call reply(\"saved\")",
        "    case (\"quit\")",
        "      exit",
        "    case default",
        "      call fail(\"unknown command \"//trim(word))",
        "    end select",
        "  end do",
        *parts.cleanup,
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
        f"    real(c_double) :: row({parts.nrow})",
        "    step_loss = 0",
        *parts.timed,
        *parts.record,
        "    timings(:, k) = row",
        f"    losses(k) = step_loss / {parts.ncalls}",
        "  end subroutine iteration",
        "",
        *(parts.copy_state or NO_STATE),
        *parts.contains,
        "",
        f"end program {parts.name}",
        "",
    ]
    return "\n".join(wrapped for line in lines for wrapped in fortran_lines(line))


def fortran_lines(line: str, width: int = 100) -> list[str]:
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
