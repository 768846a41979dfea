! couplescope's side of a library host's Fortran driver: the shared file and the commands.
!
! The worker (Python) and this driver share one file, mapped into both processes: the host
! arrays the user's library reads and writes, the NaN patterns and snapshots of the outputs,
! each call's timings and loss. The worker writes one command per line on the driver's
! standard input ("load", "call N", "batch N BUDGET FEED", "state", "weights", "save PATH",
! "quit"); the
! driver answers each with one line starting "couplescope:" on standard output (the library
! may print there too). Nothing here runs between the two clock reads of a timed call:
! the generated program calls these routines only between calls.
module couplescope_shared
  use, intrinsic :: iso_c_binding, only: c_ptr, c_char, c_int, c_long, c_size_t, c_intptr_t, &
                                         c_int64_t, c_null_char, c_null_ptr, c_associated, &
                                         c_double, c_f_pointer
  use, intrinsic :: iso_fortran_env, only: output_unit, int64
  implicit none
  private
  public :: map_shared, at, copy_bytes, read_command, reply, fail, config_unit, open_config, &
            clock_seconds, doubles_at

  integer, parameter :: config_unit = 41
  type(c_ptr), save :: base = c_null_ptr

  interface
    function c_fopen(path, mode) bind(c, name="fopen") result(stream)
      import :: c_ptr, c_char
      character(kind=c_char), dimension(*), intent(in) :: path, mode
      type(c_ptr) :: stream
    end function c_fopen
    function c_fileno(stream) bind(c, name="fileno") result(fd)
      import :: c_ptr, c_int
      type(c_ptr), value :: stream
      integer(c_int) :: fd
    end function c_fileno
    function c_fclose(stream) bind(c, name="fclose") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: stream
      integer(c_int) :: status
    end function c_fclose
    function c_mmap(address, length, protection, flags, fd, offset) bind(c, name="mmap") result(mapped)
      import :: c_ptr, c_size_t, c_int, c_long
      type(c_ptr), value :: address
      integer(c_size_t), value :: length
      integer(c_int), value :: protection, flags, fd
      integer(c_long), value :: offset
      type(c_ptr) :: mapped
    end function c_mmap
    function c_memcpy(destination, source, count) bind(c, name="memcpy") result(destination_out)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: destination, source
      integer(c_size_t), value :: count
      type(c_ptr) :: destination_out
    end function c_memcpy
  end interface

contains

  !> Map the shared file (PROT_READ | PROT_WRITE, MAP_SHARED) for the driver's life.
  subroutine map_shared(path, nbytes)
    character(*), intent(in) :: path
    integer(int64), intent(in) :: nbytes
    type(c_ptr) :: stream
    integer(c_int) :: status

    stream = c_fopen(trim(path)//c_null_char, "r+"//c_null_char)
    if (.not. c_associated(stream)) call fail("cannot open the shared file "//trim(path))
    base = c_mmap(c_null_ptr, int(nbytes, c_size_t), 3_c_int, 1_c_int, c_fileno(stream), 0_c_long)
    status = c_fclose(stream)   ! the mapping stays
    if (transfer(base, 0_c_intptr_t) == -1_c_intptr_t) call fail("cannot map the shared file "//trim(path))
  end subroutine map_shared

  !> The address `offset` bytes into the shared file.
  function at(offset) result(address)
    integer(int64), intent(in) :: offset
    type(c_ptr) :: address
    address = transfer(transfer(base, 0_c_intptr_t) + int(offset, c_intptr_t), address)
  end function at

  !> `count` doubles at `offset` (timings, losses) as a Fortran array.
  function doubles_at(offset, count) result(values)
    integer(int64), intent(in) :: offset, count
    real(c_double), pointer :: values(:)
    call c_f_pointer(at(offset), values, [count])
  end function doubles_at

  !> Copy `count` bytes within the shared file (NaN into an output, an output into its
  !> snapshot, a step's data into the host arrays): never inside a timed call.
  subroutine copy_bytes(to, from, count)
    integer(int64), intent(in) :: to, from, count
    type(c_ptr) :: ignored
    ignored = c_memcpy(at(to), at(from), int(count, c_size_t))
  end subroutine copy_bytes

  subroutine open_config(path)
    character(*), intent(in) :: path
    integer :: status
    open(unit=config_unit, file=trim(path), status="old", action="read", iostat=status)
    if (status /= 0) call fail("cannot read the driver's configuration "//trim(path))
  end subroutine open_config

  !> The next command: its word, and for "call" and "batch" the number of iterations, the
  !> seconds after which a batch stops early, and whether each iteration copies in its
  !> step's data first (feed 1); "quit" when the worker is gone.
  subroutine read_command(word, count, budget, feed, text)
    character(len=*), intent(out) :: word, text
    integer(int64), intent(out) :: count
    real(c_double), intent(out) :: budget
    integer, intent(out) :: feed
    character(len=4096) :: line
    integer :: status, space

    count = 0
    budget = 0
    feed = 0
    text = ""
    read(*, "(A)", iostat=status) line
    if (status /= 0) then
      word = "quit"
      return
    end if
    line = adjustl(line)
    space = index(line, " ")
    word = line(:max(space - 1, 1))
    text = adjustl(line(space + 1:))
    if (word == "batch" .or. word == "call") then
      read(text, *, iostat=status) count, budget, feed
    end if
  end subroutine read_command

  !> One answer line to the worker, flushed.
  subroutine reply(text)
    character(*), intent(in) :: text
    write(output_unit, "(A)") "couplescope: "//trim(text)
    flush(output_unit)
  end subroutine reply

  !> Say why the driver cannot go on, and stop.
  subroutine fail(text)
    character(*), intent(in) :: text
    call reply("error "//trim(text))
    stop 3
  end subroutine fail

  !> Seconds between two system_clock counts.
  pure function clock_seconds(first, last, rate) result(seconds)
    integer(int64), intent(in) :: first, last, rate
    real(c_double) :: seconds
    seconds = real(last - first, c_double) / real(rate, c_double)
  end function clock_seconds

end module couplescope_shared
