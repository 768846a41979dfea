! couplescope's side of the forpy host's driver: everything around the timed calls.
!
! The driver embeds the Python that runs couplescope, through the user's forpy. Here, never
! between two clock reads of a timed call: Python started (forpy_initialize) and our helper
! imported (couplescope.backends.hosts.driver.forpy_side, which reads the run's
! configuration and hands back the `config` dict with the phase clock in it); the bridge
! module imported by name from its folder put first on sys.path and its `initialize(config)`
! called, as forpy's users do (get_sys_path, import_py, call_py); after each iteration the
! phases the module timed added into its timings row; a failed call's Python exception read
! (err_print hands it to the helper's excepthook) and answered as "raised N TEXT"; the
! module's state() and save(path) for the training checks.
module couplescope_forpy
  use, intrinsic :: iso_c_binding, only: c_int
  use, intrinsic :: iso_fortran_env, only: int64
  use forpy_mod
  use couplescope_shared, only: fail, reply
  implicit none
  private
  public :: start_python, load_module, python_failed, python_raised, add_module_phases, reply_made, &
            save_model, write_state, stop_python, init_args

  type(module_py), save :: helper
  !> (config,): the argument tuple of the module's initialize
  type(tuple), save :: init_args
  character(len=:), allocatable, save :: module_folder, module_file
  !> set by python_failed during an iteration; the batch ends and its answer says why
  logical, save :: python_raised = .false.
  character(len=:), allocatable, save :: raised_text

contains

  !> Start the embedded Python, import the helper and get the configuration from it.
  subroutine start_python(config_path)
    character(*), intent(in) :: config_path
    integer(c_int) :: ie
    type(tuple) :: args, started_items
    type(str) :: path
    type(object) :: started, config

    ie = forpy_initialize()
    if (ie == NO_NUMPY_ERROR) call fail("the embedded Python cannot import numpy")
    if (ie /= 0) call python_fatal("forpy_initialize failed")
    ie = import_py(helper, "couplescope.backends.hosts.driver.forpy_side")
    if (ie /= 0) call python_fatal("the embedded Python cannot import couplescope")
    ie = tuple_create(args, 1)
    ie = str_create(path, config_path)
    ie = args%setitem(0, path)
    ie = call_py(started, helper, "start", args)
    if (ie /= 0) call fail("the forpy driver's configuration failed: "//python_error_text())
    ie = cast(started_items, started)
    ie = started_items%getitem(config, 0)
    ie = started_items%getitem(module_folder, 1)
    ie = started_items%getitem(module_file, 2)
    ie = tuple_create(init_args, 1)
    ie = init_args%setitem(0, config)
    call config%destroy
    call started_items%destroy
    call started%destroy
    call path%destroy
    call args%destroy
  end subroutine start_python

  !> Import the bridge module by name, its folder first on sys.path, and initialize it.
  subroutine load_module(bridge_module, module_name)
    type(module_py), intent(out) :: bridge_module
    character(len=:), allocatable, intent(out) :: module_name
    type(list) :: paths
    type(str) :: folder
    integer(c_int) :: ie

    ie = get_sys_path(paths)
    ie = str_create(folder, module_folder)
    ie = paths%insert(0, folder)
    call folder%destroy
    call paths%destroy
    module_name = module_file
    ie = import_py(bridge_module, module_name)
    if (ie /= 0) call fail("importing "//module_name//" failed: "//python_error_text())
    ie = call_py_noret(bridge_module, "initialize", init_args)
    if (ie /= 0) call fail(module_name//".initialize raised "//python_error_text())
  end subroutine load_module

  !> A statement of the iteration failed: keep its Python exception (the first one only)
  !> for the batch's answer. `what` says what was wrong when it is not the exception alone.
  subroutine python_failed(what)
    character(*), intent(in) :: what
    if (python_raised) return
    python_raised = .true.
    if (len(what) > 0) then
      raised_text = "TypeError: "//what//" ("//python_error_text()//")"
    else
      raised_text = python_error_text()
    end if
  end subroutine python_failed

  !> The phases the module timed during iteration k, added into its timings row.
  subroutine add_module_phases(k)
    integer(int64), intent(in) :: k
    type(tuple) :: args
    integer(c_int) :: ie
    ie = tuple_create(args, 1)
    ie = args%setitem(0, k)
    ie = call_py_noret(helper, "after", args)
    call args%destroy
    if (ie /= 0) call fail("reading the module's phases failed: "//python_error_text())
  end subroutine add_module_phases

  !> The answer to a call or batch: "done N", or "raised N TEXT" when iteration N + 1 failed.
  subroutine reply_made(made)
    integer(int64), intent(in) :: made
    character(len=32) :: count
    integer(c_int) :: ie
    write(count, "(I0)") made
    if (python_raised) then
      ie = call_py_noret(helper, "forget")   ! what the failed call timed belongs to no iteration
      python_raised = .false.
      call reply("raised "//trim(count)//" "//raised_text)
    else
      call reply("done "//trim(count))
    end if
  end subroutine reply_made

  !> The module's save(path), for --save-model.
  subroutine save_model(path)
    character(*), intent(in) :: path
    type(tuple) :: args
    type(str) :: where
    integer(c_int) :: ie
    ie = tuple_create(args, 1)
    ie = str_create(where, path)
    ie = args%setitem(0, where)
    ie = call_py_noret(helper, "save", args)
    call where%destroy
    call args%destroy
    if (ie /= 0) call fail("save raised "//python_error_text())
  end subroutine save_model

  !> The module's state() (with grads: the gradients too) written where the worker reads it.
  subroutine write_state(grads)
    logical, intent(in) :: grads
    type(tuple) :: args
    integer(c_int) :: ie
    ie = tuple_create(args, 1)
    ie = args%setitem(0, grads)
    ie = call_py_noret(helper, "state", args)
    call args%destroy
    if (ie /= 0) call fail("state raised "//python_error_text())
  end subroutine write_state

  subroutine stop_python
    call init_args%destroy
    call helper%destroy
    call forpy_finalize
  end subroutine stop_python

  !> The pending Python exception as "Type: message" (forpy's err_print hands it to the
  !> helper's excepthook, which keeps it), and cleared. Before the helper set its hook,
  !> err_print prints the traceback (to the driver's stderr, which the worker keeps).
  function python_error_text() result(text)
    character(len=:), allocatable :: text
    type(object) :: said
    integer(c_int) :: ie
    call err_print
    ie = call_py(said, helper, "last_error")
    if (ie == 0) ie = cast(text, said)
    if (ie /= 0 .or. .not. allocated(text)) text = "an exception (its traceback is above)"
    if (len(text) == 0) text = "an exception (its traceback is above)"
    call said%destroy
    call err_clear
  end function python_error_text

  !> Python failed before the helper was imported: forpy prints the traceback; stop.
  subroutine python_fatal(what)
    character(*), intent(in) :: what
    call err_print
    call fail(what//" (the embedded Python's traceback is above)")
  end subroutine python_fatal

end module couplescope_forpy
